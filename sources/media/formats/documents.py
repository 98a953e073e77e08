"""Documents: plain text, Markdown, HTML pages and PDFs.

Each file is one item with its `media_type`, `doc_type` (the extension), `summary` and first
five `headings`; long documents get the automatic ~500-token chunks, PDFs get chunks within
each page so every chunk knows its `page`.
"""

from __future__ import annotations

import io
import itertools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...storage.items import ChunkSpan, ParsedItem
from ...storage.records.chunking import chunk_text
from ...text import dates
from ...text.decoding import decode_text
from ...text.frontmatter import split_front_matter, string_list
from .htmltext import parse_html
from .maintext import main_text
from .summary import lead_text, summarize

if TYPE_CHECKING:
    from pypdf import PdfReader

_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_UNDERLINE = re.compile(r"(=+|-+)[ \t]*")
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE)
MAX_HEADINGS = 5


def setext_headings(text: str) -> list[str]:
    """Lines underlined with at least three `=` or `-` (Setext headings), in order.

    A scan of line pairs, linear in the text: the regex it replaces backtracked
    quadratically on one long line (a 200 KB line took minutes)."""
    lines = text.split("\n")
    found = []
    for line, under in itertools.pairwise(lines):
        mark = _UNDERLINE.fullmatch(under) if under[:1] in ("=", "-") else None
        if mark and len(mark.group(1)) >= 3 and line.strip():
            found.append(line.strip())
    return found


def document(
    path: Path,
    media_type: str,
    title: str,
    content: str,
    *,
    created: str | None = None,
    summary_source: str | None = None,
    chunks: list[ChunkSpan] | None = None,
    tags: list[str] | None = None,
    **meta: Any,
) -> ParsedItem:
    """One document item; `meta` adds type-specific fields (url, headings, author…)."""
    mtime = dates.file_mtime(path)
    full_meta = {
        "media_type": media_type,
        "doc_type": path.suffix.lower().lstrip("."),
        "summary": summarize(summary_source if summary_source is not None else content),
        "file_name": path.name,
        **{k: v for k, v in meta.items() if v not in (None, "", [])},
    }
    full_meta.setdefault("headings", [])
    return ParsedItem(
        key="",
        title=" ".join(title.split()) or path.stem,
        content=content,
        created_at=created or mtime,
        last_modified=mtime,
        tags=tags or [],
        meta=full_meta,
        chunks=chunks,
    )


def parse_txt(path: Path, raw: bytes) -> list[ParsedItem]:
    text = decode_text(raw).strip("\n")
    headings = setext_headings(text)
    first = next((line.strip() for line in text.split("\n") if line.strip()), "")
    title = headings[0] if headings and text.lstrip().startswith(headings[0]) else ""
    if not title and len(first) <= 80 and "\n\n" in text[: len(first) + 4]:
        title = first
    skip = set(headings) | {title}
    return [
        document(
            path, "txt", title, text, summary_source=lead_text(text, skip), headings=headings[:MAX_HEADINGS]
        )
    ]


def parse_markdown(path: Path, raw: bytes) -> list[ParsedItem]:
    front, body = split_front_matter(decode_text(raw))
    body = body.strip("\n")
    headings = [m.group(2).strip() for m in _MD_HEADING.finditer(_FENCE.sub("", body))]
    title = str(front.get("title") or "").strip() or (headings[0] if headings else "")
    tags = string_list(front.get("tags")) + string_list(front.get("keywords"))
    created = dates.parse_date(front.get("created") or front.get("date"))
    return [
        document(
            path,
            "markdown",
            title,
            body,
            created=created,
            tags=list(dict.fromkeys(tags)),
            summary_source=lead_text(body, set(headings)),
            headings=headings[:MAX_HEADINGS],
            author=str(front["author"]) if front.get("author") else None,
        )
    ]


def parse_html_file(path: Path, raw: bytes) -> list[ParsedItem]:
    """A saved web page: its main text (maintext.py), the page's metadata and a one-line title."""
    markup = decode_text(raw, declared=declared_charset(raw))
    page = parse_html(markup)
    main = main_text(markup, page.text, page.headings)
    skip = {page.title, *main.headings}
    return [
        document(
            path,
            "html",
            page.title,
            main.text,
            created=dates.parse_date(page.published),
            summary_source=lead_text(main.text, skip),
            headings=main.headings[:MAX_HEADINGS],
            url=page.url,
            author=page.author,
            description=page.description,
        )
    ]


def declared_charset(raw: bytes) -> str | None:
    """The charset a page declares in its first 2 KB (`<meta charset>` or http-equiv)."""
    found = _META_CHARSET.search(raw[:2048])
    return found.group(1).decode("ascii") if found else None


def _pdf_reader(raw: bytes) -> PdfReader:
    from pypdf import PdfReader  # here: only PDFs need it, and it is slow to load
    from pypdf.errors import PyPdfError

    if b"%%EOF" not in raw.rstrip()[-4096:]:
        raise ValueError("truncated PDF: no %%EOF marker at the end of the file")
    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ValueError("encrypted PDF: it needs a password")
        return reader
    except PyPdfError as exc:
        raise ValueError(f"not a valid PDF: {exc}") from exc


def _outline_titles(reader: PdfReader) -> list[str]:
    from pypdf.errors import PyPdfError

    titles: list[str] = []

    def walk(entries: Any) -> None:
        for entry in entries:
            if isinstance(entry, list):
                walk(entry)
            elif getattr(entry, "title", None):
                titles.append(str(entry.title).strip())

    try:
        walk(reader.outline)
    except (PyPdfError, KeyError, TypeError, ValueError):
        return []
    return titles


def parse_pdf(path: Path, raw: bytes) -> list[ParsedItem]:
    from pypdf.errors import PyPdfError

    reader = _pdf_reader(raw)
    try:
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        info = reader.metadata
        title = str(info.title or "") if info else ""
        created = dates.parse_date(info.creation_date) if info else None
        author = str(info.author) if info and info.author else None
    except (PyPdfError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a valid PDF: {exc}") from exc
    parts, spans, pos = [], [], 0
    for number, text in enumerate(pages, start=1):
        spans += [ChunkSpan(pos + c.start, pos + c.end, meta={"page": number}) for c in chunk_text(text)]
        parts.append(text)
        pos += len(text) + 2
    content = "\n\n".join(parts)
    if not content.strip():
        return []  # a scanned PDF without a text layer: reported as "no importable content"
    return [
        document(
            path,
            "pdf",
            title,
            content,
            created=created,
            chunks=spans,
            summary_source=lead_text(content, {title.strip()}),
            headings=_outline_titles(reader)[:MAX_HEADINGS],
            author=author,
            pages=len(pages),
        )
    ]
