"""Notes: folders of Markdown and text files (an Obsidian vault works)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aiosqlite
from pydantic import Field

from ..models import NoteResult
from ..source import ChunkedSource, SearchOptions
from ..storage.items import ParsedItem
from ..storage.store.filters import Filter, TagIn
from ..text import dates
from ..text.decoding import decode_text
from ..text.frontmatter import split_front_matter, string_list
from .migrations import MIGRATIONS

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
_INLINE_TAG = re.compile(r"(?:(?<=\s)|^)#([A-Za-z][\w/-]{1,48})\b")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def tag_filter(keywords: list[str]) -> Filter:
    """Items carrying any of the given tags (case-insensitive)."""
    return TagIn(tuple(k.lower().lstrip("#") for k in keywords))


class NotesOptions(SearchOptions):
    keywords: list[str] | None = Field(default=None, description="Only notes tagged with any of these.")


class NotesSource(ChunkedSource[NoteResult]):
    name = "notes"
    id_field = "note_id"
    result_model = NoteResult
    migrations = MIGRATIONS
    extensions = frozenset({".md", ".markdown", ".txt"})
    options_model = NotesOptions

    def search_filters(self, options: NotesOptions) -> list[Filter]:
        return [tag_filter(options.keywords)] if options.keywords else []

    def parse_file(self, path: Path, raw: bytes) -> list[ParsedItem]:
        text = decode_text(raw)
        front, body = split_front_matter(text)
        # The patterns scan every position of the text: skip them when their mark is absent.
        without_code = _FENCE.sub("", body) if "```" in body or "~~~" in body else body
        marked = "#" in without_code
        headings = [m.group(2).strip() for m in _HEADING.finditer(without_code)] if marked else []
        title = str(front.get("title") or "").strip() or (headings[0] if headings else "") or path.stem
        tags = string_list(front.get("tags")) + string_list(front.get("keywords"))
        tags += _INLINE_TAG.findall(without_code) if marked else []
        mtime = dates.file_mtime(path)
        created = dates.parse_date(front.get("created") or front.get("date")) or mtime
        modified = dates.parse_date(front.get("modified") or front.get("updated")) or mtime
        return [
            ParsedItem(
                key="",
                title=title,
                content=body.strip("\n"),
                created_at=created,
                last_modified=modified,
                tags=list(dict.fromkeys(tags)),
                meta={"headings": headings[:5], "file_name": path.name},
            )
        ]

    def fields(self, item: aiosqlite.Row, chunk: aiosqlite.Row | None) -> dict[str, Any]:
        return {"headings": json.loads(item["meta"]).get("headings", [])}


source = NotesSource()
