"""Items made of named text fields (a card's description, a prompt's system_prompt…).

The item's content is the fields in order, each under a one-line `## ` heading; every field is
one explicit chunk (long fields are split into ~500-token pieces that keep the field name),
so a hit names its field and a `loc = {field, approx_offset}` finds it again. The headings
sit between the chunks: they are read in `full` and `chunk_with_siblings` but never matched.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from dataclasses import field as default
from typing import Any

import aiosqlite

from ..errors import InvalidArgumentError
from ..models import Loc
from ..storage.items import ChunkSpan
from ..storage.records.chunking import chunk_text
from .snippets import make_snippet

SUMMARY_LENGTH = 200


@dataclass(frozen=True)
class Section:
    field: str
    heading: str
    text: str
    meta: dict[str, Any] = default(default_factory=dict)


def assemble(sections: Iterable[Section]) -> tuple[str, list[ChunkSpan]]:
    """The content (headed sections) and one or more chunk spans per non-empty section."""
    content = ""
    spans: list[ChunkSpan] = []
    for section in sections:
        text = section.text.strip()
        if not text:
            continue
        content += ("\n\n" if content else "") + "## " + section.heading + "\n"
        start = len(content)
        content += text
        for piece in chunk_text(text):
            spans.append(ChunkSpan(start + piece.start, start + piece.end, section.field, dict(section.meta)))
    return content, spans


def summary_meta(content: str, spans: Sequence[ChunkSpan], order: Sequence[str]) -> dict[str, Any]:
    """An item's summary: the start of the first of the fields `order` names that it has (cut
    at a sentence or word), with that field and its offset (`summary_loc`); {} when none."""
    for name in order:
        pieces = [s for s in spans if s.field == name]
        if pieces:
            text = content[pieces[0].start : pieces[-1].end]
            summary = make_snippet(text, SUMMARY_LENGTH)
            return {"summary": summary, "summary_field": name, "summary_at": pieces[0].start}
    return {}


def summary_loc(meta: dict[str, Any]) -> Loc | None:
    """The loc of the field an item's summary comes from (see `summary_meta`)."""
    if not meta.get("summary_field"):
        return None
    return Loc(field=meta["summary_field"], approx_offset=meta.get("summary_at"))


def field_loc(chunk: aiosqlite.Row) -> Loc:
    return Loc(field=chunk["field"], approx_offset=chunk["start_offset"])


def field_anchor(loc: Loc, chunks: Sequence[aiosqlite.Row]) -> int | None:
    """The chunk a `{field, approx_offset}` loc points at; None when the loc names no field.

    Within the field, the chunk holding `approx_offset` wins, else the field's first chunk.
    """
    if not loc.field:
        return None
    same = [c for c in chunks if c["field"] == loc.field]
    if not same:
        names = ", ".join(dict.fromkeys(str(c["field"]) for c in chunks))
        raise InvalidArgumentError("loc.field", f"this item has no field {loc.field!r}; it has: {names}")
    if loc.approx_offset is not None:
        for c in same:
            if c["start_offset"] <= loc.approx_offset < c["end_offset"]:
                return int(c["chunk_index"])
    return int(same[0]["chunk_index"])


def text_of(value: Any, name: str) -> str:
    """A text field from JSON/YAML/TOML: strings and numbers as text, lists of them joined."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return "\n".join(str(v) for v in value)
    raise ValueError(f"field {name!r} must be text, got {type(value).__name__}")
