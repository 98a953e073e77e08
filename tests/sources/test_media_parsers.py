"""The media parsers on their own: reply stripping, HTML text, transcripts, Word and EPUB files."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from knowledge_mcp.sources.errors import InvalidArgumentError
from knowledge_mcp.sources.media import source
from knowledge_mcp.sources.media.formats import packages
from knowledge_mcp.sources.media.formats.documents import setext_headings
from knowledge_mcp.sources.media.formats.emails import NotAnEmailError, parse_eml, parse_mbox, strip_replies
from knowledge_mcp.sources.media.formats.htmltext import parse_html
from knowledge_mcp.sources.media.formats.summary import summarize
from knowledge_mcp.sources.media.formats.transcripts import parse_cues, render_srt, render_text, render_vtt
from knowledge_mcp.sources.media.source import date_filter
from knowledge_mcp.sources.storage.items import ParsedFile
from tests.conftest import FIXTURES

TRANSCRIPTS = FIXTURES / "media" / "transcripts"


@pytest.mark.parametrize(
    "body, kept",
    [
        ("Sounds good.\n\nOn Mon, 2 Jun 2025, Ann <a@x.org> wrote:\n> the zeppelin plan\n", "Sounds good."),
        ("Yes.\nOn Mon, 2 Jun 2025 at 10:02, Ann Example\n<a@x.org> wrote:\n> old\n> text", "Yes."),
        ("Done, see below.\n\n-- \nAnn\nCEO, Example Ltd", "Done, see below."),
        ("Fine by me.\n\n-----Original Message-----\nFrom: Bob\nold text", "Fine by me."),
        ("He wrote: the numbers add up.\n>quoted", "He wrote: the numbers add up."),
        ("a\n\n\n\nb", "a\n\nb"),
    ],
)
def test_strip_replies_keeps_only_the_authors_own_text(body: str, kept: str) -> None:
    assert strip_replies(body) == kept


def test_an_html_only_email_is_indexed_as_text(tmp_path: Path) -> None:
    raw = (
        b"From: Ann <ann@example.org>\r\nTo: bob@example.org\r\nSubject: Fwd: Re: Kayak trip\r\n"
        b"Date: Mon, 2 Jun 2025 09:00:00 +0000\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
        b"<html><head><style>.x{}</style></head><body><p>Paddles &amp; dry bags</p>"
        b"<blockquote><p>&gt; older</p></blockquote></body></html>"
    )
    path = tmp_path / "kayak.eml"
    path.write_bytes(raw)
    (item,) = parse_eml(path, raw)
    assert item.content == "Paddles & dry bags"
    assert item.meta["thread_id"] == "Kayak trip"
    assert item.meta["from"] == "Ann <ann@example.org>" and item.meta["cc"] == []


def test_an_mbox_without_messages_is_not_an_email(tmp_path: Path) -> None:
    path = tmp_path / "junk.mbox"
    path.write_bytes(b"just some text\nwith no headers at all\n")
    with pytest.raises(NotAnEmailError):
        parse_mbox(path, path.read_bytes())


def test_the_not_really_eml_fixture_is_refused() -> None:
    path = FIXTURES / "broken" / "media" / "not-really.eml"
    with pytest.raises(NotAnEmailError, match="not an email"):
        parse_eml(path, path.read_bytes())


def test_html_text_drops_non_content_and_falls_back_to_h1_and_og_url() -> None:
    page = parse_html(
        "<html><head><meta property='og:url' content='https://e.example/a'></head><body>"
        "<nav>Menu</nav><h1>Big  Title</h1><p>Body <b>text</b>.</p><script>x()</script>"
        "<noscript>enable js</noscript><ul><li>one</li><li>two</li></ul></body></html>"
    )
    assert page.title == "Big Title" and page.url == "https://e.example/a"
    assert page.text == "Big Title\n\nBody text.\n\none\n\ntwo"


@pytest.mark.parametrize("name", ["podcast-episode-12.vtt", "talk-sqlite-internals.srt"])
def test_srt_and_vtt_regenerated_from_cues_parse_back_to_the_same_cues(name: str) -> None:
    cues, _ = parse_cues((TRANSCRIPTS / name).read_text())
    # SRT has no voice tags: the speaker is kept as a "Name: " prefix
    spoken = [
        {
            "start_s": c["start_s"],
            "end_s": c["end_s"],
            "text": f"{c['speaker']}: {c['text']}" if "speaker" in c else c["text"],
        }
        for c in cues
    ]
    assert parse_cues(render_srt(cues))[0] == spoken
    assert parse_cues(render_vtt(cues))[0] == cues


def test_text_rendering_puts_a_timestamp_and_the_speaker_before_each_cue() -> None:
    cues, _ = parse_cues((TRANSCRIPTS / "podcast-episode-12.vtt").read_text())
    lines = render_text(cues, include_timestamps=True).split("\n")
    assert len(lines) == len(cues)
    assert lines[0].startswith("[00:00:04] Welcome back to Tidewater")
    assert lines[3].startswith("[00:00:54] Ewan: Honestly?")
    assert render_text(cues, include_timestamps=False).split("\n")[3].startswith("Ewan: Honestly?")


def test_summary_keeps_whole_sentences_within_200_characters() -> None:
    text = "First sentence here. " + "Second one is much longer " * 10 + "."
    assert summarize(text) == "First sentence here."
    long_word_run = "word " * 100
    assert len(summarize(long_word_run)) <= 200 and summarize(long_word_run).endswith("…")


@pytest.mark.parametrize("value", ["yesterday", "2025-13-01", "06/30/2025", "2025-06-30T25:00"])
@pytest.mark.parametrize("field", ["date_from", "date_to"])
def test_bad_dates_name_the_field(field: str, value: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        date_filter(value, field)
    assert info.value.field == field


def _zip(path: Path, files: dict[str, str]) -> bytes:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path.read_bytes()


W_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def test_docx_paragraphs_headings_and_core_title_are_read(tmp_path: Path) -> None:
    body = (
        f"<w:document {W_NS}><w:body>"
        '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Ferry timetable</w:t></w:r></w:p>'
        "<w:p><w:r><w:t>Boats leave at </w:t></w:r><w:r><w:t>nine sharp.</w:t></w:r></w:p>"
        "</w:body></w:document>"
    )
    core = (
        "<cp:coreProperties "
        'xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/">'
        "<dc:title>Island travel</dc:title><dcterms:created>2025-03-01T08:00:00Z</dcterms:created>"
        "</cp:coreProperties>"
    )
    path = tmp_path / "travel.docx"
    raw = _zip(path, {"word/document.xml": body, "docProps/core.xml": core})
    (item,) = source.parse_file(path, raw)
    assert item.title == "Island travel" and item.created_at == "2025-03-01T08:00:00+00:00"
    assert item.content == "Ferry timetable\n\nBoats leave at nine sharp."
    assert item.meta["headings"] == ["Ferry timetable"] and item.meta["media_type"] == "docx"


EPUB_CONTAINER = (
    '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
    '<rootfile full-path="OEBPS/content.opf"/></rootfiles></container>'
)
EPUB_CHAPTER = "<html><head><title>t</title></head><body><h1>{0}</h1><p>{0} text.</p></body></html>"


def make_epub(path: Path, spine: list[str], chapters: dict[str, str]) -> bytes:
    """An EPUB whose spine lists `spine` (hrefs under OEBPS/) and which holds `chapters`."""
    items = "".join(f'<item id="c{i}" href="{href}"/>' for i, href in enumerate(spine))
    refs = "".join(f'<itemref idref="c{i}"/>' for i in range(len(spine)))
    opf = (
        '<package xmlns="http://www.idpf.org/2007/opf" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        "<metadata><dc:title>Tide Tables</dc:title><dc:creator>H. Cole</dc:creator></metadata>"
        f"<manifest>{items}</manifest><spine>{refs}</spine></package>"
    )
    files = {"META-INF/container.xml": EPUB_CONTAINER, "OEBPS/content.opf": opf}
    return _zip(path, files | {f"OEBPS/{name}": text for name, text in chapters.items()})


def test_epub_chapters_are_read_in_spine_order(tmp_path: Path) -> None:
    path = tmp_path / "tides.epub"
    chapters = {
        "text/one.xhtml": EPUB_CHAPTER.format("Neap"),
        "text/two.xhtml": EPUB_CHAPTER.format("Spring"),
    }
    raw = make_epub(path, ["text/two.xhtml", "text/one.xhtml"], chapters)
    parsed = source.parse_file(path, raw)
    (item,) = parsed
    assert item.title == "Tide Tables" and item.meta["author"] == "H. Cole"
    assert item.content == "Spring\n\nSpring text.\n\nNeap\n\nNeap text."
    assert item.meta["headings"] == ["Spring", "Neap"] and item.meta["media_type"] == "epub"
    assert isinstance(parsed, ParsedFile) and parsed.notices == []


def test_epub_chapters_left_out_are_notices_and_not_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(packages, "MAX_CHAPTER_BYTES", 200)
    path = tmp_path / "tides.epub"
    chapters = {
        "one.xhtml": EPUB_CHAPTER.format("Neap"),
        "big.xhtml": EPUB_CHAPTER.format("Flood " * 60),
        "pic.xhtml": "\x00\x01JFIF",
    }
    parsed = source.parse_file(
        path, make_epub(path, ["one.xhtml", "big.xhtml", "gone.xhtml", "pic.xhtml"], chapters)
    )
    assert isinstance(parsed, ParsedFile)
    assert [(p.part, p.reason.split(":")[1].strip()) for p in parsed.notices] == [
        ("OEBPS/big.xhtml", f"too large ({len(chapters['big.xhtml'])} bytes)"),
        ("OEBPS/gone.xhtml", "not in the archive"),
        ("OEBPS/pic.xhtml", "binary content, not text"),
    ]
    (item,) = parsed
    assert item.content == "Neap\n\nNeap text." and item.meta["chapters"] == 1


@pytest.mark.parametrize("suffix", [".docx", ".epub"])
def test_a_file_that_is_not_a_zip_package_fails_clearly(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"fake{suffix}"
    path.write_bytes(b"plain text pretending")
    with pytest.raises(ValueError, match=f"not a {suffix} file"):
        source.parse_file(path, path.read_bytes())


@pytest.mark.parametrize(
    "text, headings",
    [
        ("Title\n=====\n\nbody", ["Title"]),
        ("  Part two  \n---\ntext", ["Part two"]),
        ("a\n--\nb", []),  # two dashes are not an underline
        ("\n===\n", []),  # nothing above the rule
        ("x\n - - -\n", []),  # an indented or spaced rule is not an underline
        ("One\n===   \nTwo\n-----", ["One", "Two"]),
        ("word " * 200_000, []),  # one 1 MB line: a linear scan (the old regex never finished)
    ],
)
def test_setext_headings_are_lines_underlined_with_three_marks_or_more(
    text: str, headings: list[str]
) -> None:
    assert setext_headings(text) == headings
