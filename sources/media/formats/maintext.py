"""The main text of a web page: trafilatura's article extraction, else the whole page's text.

Saved web pages carry cookie banners, menus, footers and tag clouds around the article; indexed,
they make every page match words like "privacy" or "subscribe". trafilatura (a maintained
extractor, offline: it only reads the markup it is given) keeps the article's text, tables and
headings. When it keeps too little — a short page that is all content, or a layout it does not
recognise — the hand-written extractor's whole-page text is used instead (`fell_back`).
It trades a little recall for much precision against the whole page's text (measured on
mozilla/readability's test pages: `docs/performance.md`, "Web pages' main text").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from .htmltext import normalize_text

# trafilatura and the libraries it drives log the text of page elements at DEBUG: file content
# never reaches the logs, so they speak from WARNING up whatever the server's log level.
for _name in ("trafilatura", "htmldate", "justext", "courlan"):
    logging.getLogger(_name).setLevel(logging.WARNING)

MIN_MAIN_CHARS = 500  # less than this is rarely a whole article: keep the page
SHORT_PAGE_CHARS = 2000  # on a page this short there is little boilerplate to drop…
MIN_SHORT_SHARE = 0.7  # …so the article must keep 70 % of it


@dataclass
class MainText:
    text: str
    headings: list[str] = field(default_factory=list)
    fell_back: bool = False


def extract_main(markup: str) -> MainText | None:
    """trafilatura's main text and headings of `markup`, or None when it finds none."""
    # Imported here: it loads lxml, dateparser and more (docs/performance.md, "Lazy imports"),
    # which only web pages need.
    from trafilatura import bare_extraction
    from trafilatura.settings import Document

    try:
        doc = bare_extraction(
            markup, include_comments=False, include_tables=True, with_metadata=False, favor_recall=True
        )
    except (ValueError, TypeError, AttributeError):  # markup lxml cannot build a tree from
        return None
    if not isinstance(doc, Document) or not doc.text:  # a dict only when as_dict=True
        return None
    headings = []
    if doc.body is not None:
        headings = [" ".join("".join(h.itertext()).split()) for h in doc.body.iter("head")]
    return MainText(normalize_text(doc.text), [h for h in headings if h])


def keeps_enough(main: str, page: str) -> bool:
    """True when the extracted main text is a plausible article of the whole page's text."""
    if len(main) < MIN_MAIN_CHARS:
        return False
    return len(page) >= SHORT_PAGE_CHARS or len(main) >= MIN_SHORT_SHARE * len(page)


def main_text(markup: str, page_text: str, page_headings: list[str]) -> MainText:
    """The page's main text when the extractor keeps enough of it, else the whole page's text."""
    main = extract_main(markup)
    if main is not None and keeps_enough(main.text, page_text):
        return main
    return MainText(page_text, page_headings, fell_back=True)
