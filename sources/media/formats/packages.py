"""Zip-packaged documents: Word `.docx` and `.epub` books, read with the stdlib (zipfile, XML).

Only the text and a little metadata are taken: paragraphs and headings of a Word document,
the spine chapters of an EPUB as plain text (via the HTML parser), the title, author and date.
An EPUB chapter left out (missing, over-sized, binary) is a notice of the file's `ParsedFile`.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from ...errors import ImportFileError
from ...storage.items import ParsedFile, ParsedItem, PartProblem
from ...text import dates
from ...text.decoding import decode_text
from .documents import MAX_HEADINGS, document
from .htmltext import HtmlDocument, normalize_text, parse_html
from .summary import lead_text

MAX_MEMBER_BYTES = 64 * 1024 * 1024
MAX_CHAPTER_BYTES = MAX_MEMBER_BYTES  # an EPUB chapter over this is left out with a notice
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
DC = "{http://purl.org/dc/elements/1.1/}"
DCTERMS = "{http://purl.org/dc/terms/}"
OPF = "{http://www.idpf.org/2007/opf}"
CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"


def _open_zip(raw: bytes, kind: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile as exc:
        raise ValueError(f"not a {kind} file: {exc}") from exc


def _xml(archive: zipfile.ZipFile, name: str) -> ET.Element:
    try:
        info = archive.getinfo(name)
    except KeyError:
        raise ValueError(f"missing {name} in the archive") from None
    if info.file_size > MAX_MEMBER_BYTES:
        raise ValueError(f"{name} is too large ({info.file_size} bytes)")
    try:
        return ET.fromstring(archive.read(info))
    except ET.ParseError as exc:
        raise ValueError(f"{name}: malformed XML ({exc})") from exc


def _text(root: ET.Element | None, tag: str) -> str:
    found = root.find(f".//{tag}") if root is not None else None
    return (found.text or "").strip() if found is not None else ""


def _paragraph(p: ET.Element) -> str:
    parts = []
    for node in p.iter():
        if node.tag == f"{W}t":
            parts.append(node.text or "")
        elif node.tag == f"{W}tab":
            parts.append("\t")
        elif node.tag in (f"{W}br", f"{W}cr"):
            parts.append("\n")
    return "".join(parts).strip()


def parse_docx(path: Path, raw: bytes) -> list[ParsedItem]:
    with _open_zip(raw, ".docx") as archive:
        body = _xml(archive, "word/document.xml")
        core = _xml(archive, "docProps/core.xml") if "docProps/core.xml" in archive.namelist() else None
    paragraphs, headings = [], []
    for p in body.iter(f"{W}p"):
        text = _paragraph(p)
        if not text:
            continue
        style = p.find(f"{W}pPr/{W}pStyle")
        name = (style.get(f"{W}val") or "") if style is not None else ""
        if name.lower().startswith(("heading", "title")):
            headings.append(text)
        paragraphs.append(text)
    return [_packaged(path, "docx", core, f"{DCTERMS}created", "\n\n".join(paragraphs), headings)]


def _packaged(
    path: Path,
    kind: str,
    meta: ET.Element | None,
    date_tag: str,
    content: str,
    headings: list[str],
    **fields: Any,
) -> ParsedItem:
    """The document of a package (docx, epub): title, author and date from its Dublin Core
    metadata (`date_tag` names its date), else the first heading for a title."""
    return document(
        path,
        kind,
        _text(meta, f"{DC}title") or (headings[0] if headings else ""),
        content,
        created=dates.parse_date(_text(meta, date_tag)),
        summary_source=lead_text(content, set(headings)),
        headings=headings[:MAX_HEADINGS],
        author=_text(meta, f"{DC}creator") or None,
        **fields,
    )


def _spine(archive: zipfile.ZipFile) -> tuple[ET.Element, list[str]]:
    """The package metadata and the spine's document paths, in reading order."""
    rootfile = _xml(archive, "META-INF/container.xml").find(f".//{CONTAINER}rootfile")
    opf_path = rootfile.get("full-path", "") if rootfile is not None else ""
    if not opf_path:
        raise ValueError("META-INF/container.xml names no package document")
    opf = _xml(archive, opf_path)
    base = posixpath.dirname(opf_path)
    manifest = {i.get("id"): i.get("href", "") for i in opf.iter(f"{OPF}item")}
    order = [manifest.get(ref.get("idref")) for ref in opf.iter(f"{OPF}itemref")]
    return opf, [posixpath.normpath(posixpath.join(base, href)) for href in order if href]


def _chapters(archive: zipfile.ZipFile, names: list[str]) -> tuple[list[HtmlDocument], list[PartProblem]]:
    """The spine's chapters as pages, and a notice for each chapter left out (missing,
    over-sized or not text)."""
    pages, left_out = [], []
    present = set(archive.namelist())
    for name in names:
        if name not in present:
            left_out.append(PartProblem(name, "chapter left out: not in the archive"))
            continue
        size = archive.getinfo(name).file_size
        if size > MAX_CHAPTER_BYTES:
            left_out.append(PartProblem(name, f"chapter left out: too large ({size} bytes)"))
            continue
        try:
            pages.append(parse_html(decode_text(archive.read(name))))
        except ImportFileError as exc:
            left_out.append(PartProblem(name, f"chapter left out: {exc}"))
    return pages, left_out


def parse_epub(path: Path, raw: bytes) -> ParsedFile:
    with _open_zip(raw, ".epub") as archive:
        opf, names = _spine(archive)
        pages, left_out = _chapters(archive, names)
    headings = [h for page in pages for h in page.headings]
    content = normalize_text("\n\n".join(page.text for page in pages if page.text))
    item = _packaged(path, "epub", opf, f"{DC}date", content, headings, chapters=len(pages))
    return ParsedFile([item] if content else [], notices=left_out)
