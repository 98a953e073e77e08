"""HTML to plain text with the stdlib parser: the readable text of a page and its metadata.

Script, style, nav, head (except its title and meta tags) and similar non-content elements are
dropped; block elements become line breaks; headings, the canonical URL and the publication
date are collected on the way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

SKIPPED = frozenset({"script", "style", "nav", "head", "noscript", "template", "svg", "iframe", "object"})
BLOCKS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "main",
        "header",
        "footer",
        "aside",
        "blockquote",
        "pre",
        "ul",
        "ol",
        "li",
        "dl",
        "dt",
        "dd",
        "table",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "figure",
        "figcaption",
        "hr",
        "br",
        "address",
        "details",
        "summary",
        "form",
        "fieldset",
    }
)
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
VOID = frozenset(
    {"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed", "source", "wbr"}
)
DATE_META = ("article:published_time", "og:published_time", "date", "dc.date", "dcterms.created", "pubdate")

_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
_BLANKS = re.compile(r"\n\s*\n\s*(\n\s*)*")


@dataclass
class HtmlDocument:
    text: str
    title: str = ""
    headings: list[str] = field(default_factory=list)
    url: str | None = None
    published: str | None = None
    author: str | None = None
    description: str | None = None


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip_depth = 0
        self.in_title = False
        self.title_done = False  # the page's title is its first non-empty <title>…
        self.svg_depth = 0  # …outside an inline SVG (icons carry <title>s too)
        self.title_parts: list[str] = []
        self.heading: list[str] | None = None
        self.headings: list[str] = []
        self.meta: dict[str, str] = {}
        self.canonical: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k.lower(): (v or "") for k, v in attrs}
        self.svg_depth += tag == "svg"
        if tag == "title" and not self.title_done and not self.svg_depth:
            self.in_title = True
        elif tag == "meta":
            key = (a.get("property") or a.get("name") or "").lower()
            if key and "content" in a:
                self.meta.setdefault(key, a["content"].strip())
        elif tag == "link" and "canonical" in a.get("rel", "").lower().split():
            self.canonical = a.get("href") or None
        if tag in SKIPPED and tag not in VOID:
            self.skip_depth += 1
        if self.skip_depth:
            return
        if tag in BLOCKS:
            self.parts.append("\n")
        if tag in HEADINGS:
            self.heading = []

    def handle_endtag(self, tag: str) -> None:
        self.svg_depth = max(0, self.svg_depth - (tag == "svg"))
        if tag == "title" and self.in_title:
            self.in_title, self.title_done = False, bool("".join(self.title_parts).strip())
        if tag in SKIPPED and tag not in VOID:
            self.skip_depth = max(0, self.skip_depth - 1)
            return
        if self.skip_depth:
            return
        if tag in HEADINGS and self.heading is not None:
            text = _SPACES.sub(" ", "".join(self.heading)).strip()
            if text:
                self.headings.append(text)
            self.heading = None
        if tag in BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title_parts.append(data)
        if self.skip_depth:
            return
        self.parts.append(data.replace("\n", " "))
        if self.heading is not None:
            self.heading.append(data)


def normalize_text(text: str) -> str:
    """Collapse spaces within lines and runs of blank lines; strip every line."""
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def parse_html(markup: str) -> HtmlDocument:
    parser = _TextParser()
    parser.feed(markup)
    parser.close()
    text = normalize_text("".join(parser.parts))
    title = " ".join("".join(parser.title_parts).split())
    meta = parser.meta
    if not title:
        title = meta.get("og:title") or (parser.headings[0] if parser.headings else "")
    published = next((meta[k] for k in DATE_META if meta.get(k)), None)
    return HtmlDocument(
        text=text,
        title=title,
        headings=parser.headings,
        url=parser.canonical or meta.get("og:url") or None,
        published=published,
        author=meta.get("author") or None,
        description=meta.get("description") or meta.get("og:description") or None,
    )


def html_to_text(markup: str) -> str:
    return parse_html(markup).text
