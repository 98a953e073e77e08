"""Web pages: the main text without the site's boilerplate, one-line titles, declared charsets."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from knowledge_mcp.sources.media import source
from knowledge_mcp.sources.media.formats.documents import declared_charset
from knowledge_mcp.sources.media.formats.htmltext import parse_html
from knowledge_mcp.sources.media.formats.maintext import MIN_MAIN_CHARS, keeps_enough, main_text
from tests.conftest import import_into
from tests.sources.test_media_import import rows

PAGES = Path(__file__).parent / "data" / "html"


def parse(name: str) -> dict[str, object]:
    path = PAGES / name
    (item,) = source.parse_file(path, path.read_bytes())
    return {"title": item.title, "content": item.content, **item.meta}


def test_an_article_page_keeps_its_text_and_drops_the_sites_boilerplate() -> None:
    page = parse("simplyfound-1.html")
    assert "The Raspberry Pi Foundation started by a handful of volunteers in 2012" in page["content"]
    for boilerplate in ("Become an approved author", "© 2016 Simplyfound.com", "Like It, Share It!"):
        assert boilerplate not in str(page["content"])
    assert page["url"] == (
        "https://simplyfound.com/article/eb9a5e137034/raspberry-pi-3-the-credit-card-sized-pc-that-cost"
        "-only-35-all-time-bestselling-computer-in-uk"
    )


def test_extracting_a_page_logs_none_of_its_text_even_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    parse("simplyfound-1.html")  # trafilatura's DEBUG would quote a discarded element ("div 137")
    assert not [r for r in caplog.records if r.name.startswith("trafilatura")]
    assert "137" not in caplog.text


def test_a_sidebar_of_links_is_not_indexed_but_the_articles_headings_are() -> None:
    page = parse("daringfireball-1.html")
    assert "Daring Fireball is written and produced by John Gruber." in str(page["content"])
    assert "Ads via The Deck" not in str(page["content"]) and "Snapz Pro X" not in str(page["content"])
    assert page["headings"] == [
        "About This Site",
        "Mac Apps",
        "iPhone Apps",
        "Server Software",
        "Web Standards",
    ]
    assert page["title"] == "Daring Fireball: Colophon"


def test_a_title_spanning_lines_becomes_one_line() -> None:
    assert parse("missing-paragraphs.html")["title"] == (
        "Lorem ipsum dolor sit amet, consetetur sadipscing elitr, sed diam nonumy eirmod tempor invidunt"
    )


def test_icon_titles_inside_inline_svg_do_not_join_the_page_title() -> None:
    markup = "<html><head><title>\n  Tide tables\n</title></head><body><svg><title>menu</title></svg></body>"
    assert parse_html(markup).title == "Tide tables"


def test_a_short_page_that_is_all_content_keeps_all_its_text() -> None:
    markup = "<html><body><h1>Shopping</h1><ul><li>Eggs</li><li>Flour</li><li>Milk</li></ul></body></html>"
    page = parse_html(markup)
    kept = main_text(markup, page.text, page.headings)
    assert (
        kept.fell_back and kept.text == "Shopping\n\nEggs\n\nFlour\n\nMilk" and kept.headings == ["Shopping"]
    )


@pytest.mark.parametrize(
    "main, page, enough",
    [
        (MIN_MAIN_CHARS - 1, 10_000, False),  # too little to be an article
        (MIN_MAIN_CHARS, 10_000, True),  # a long page: the extractor dropped boilerplate
        (600, 1000, False),  # a short page: 60 % kept is too little
        (700, 1000, True),
        (5000, 5000, True),
    ],
)
def test_keeps_enough_wants_an_article_sized_share_of_the_page(main: int, page: int, enough: bool) -> None:
    assert keeps_enough("x" * main, "x" * page) is enough


@pytest.mark.parametrize(
    "head, charset",
    [
        (b'<meta charset="windows-1252">', "windows-1252"),
        (b"<META HTTP-EQUIV='Content-Type' CONTENT='text/html; charset=ISO-8859-1'>", "ISO-8859-1"),
        (b"<meta charset=utf-8 />", "utf-8"),
        (b"<p>charset is a word</p>", None),
    ],
)
def test_declared_charset_reads_the_meta_tag(head: bytes, charset: str | None) -> None:
    assert declared_charset(b"<html><head>" + head + b"</head>") == charset


@pytest.mark.anyio
async def test_a_windows_1252_page_imports_as_the_text_it_declares(data_dir: Path, tmp_path: Path) -> None:
    body = "<p>Crème brûlée — “the” dessert. " + "Caramel on custard, torched until it cracks. " * 20 + "</p>"
    markup = (
        f'<html><head><meta charset="windows-1252"><title>Desserts</title></head><body>{body}</body></html>'
    )
    (tmp_path / "dessert.html").write_bytes(markup.encode("cp1252"))
    summary = await import_into(data_dir, "media", tmp_path)
    assert (summary.added, summary.files_failed) == (1, 0)
    (row,) = await rows(data_dir, "SELECT title, content FROM media_items")
    assert row["title"] == "Desserts" and row["content"].startswith("Crème brûlée — “the” dessert.")
