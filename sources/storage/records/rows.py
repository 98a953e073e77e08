"""The rows an item is stored as, in every store (SQLite in `importing`, PostgreSQL in
`postgres.writing`): its id, the values of its own row and its chunk rows."""

from __future__ import annotations

import hashlib
from typing import Any

from ...text import dates
from ...text.jsontext import json_encoder
from ..items import ChunkSpan, ParsedItem
from .chunking import DEFAULT_CHARS_PER_TOKEN, DEFAULT_CHUNK_TOKENS, chunk_text

_JSON = json_encoder(default=str)
_TAGS_JSON = json_encoder()
"""`json.dumps(..., ensure_ascii=False[, default=str])` with one encoder each, not one per call
(the same text)."""


def item_id_for(origin: str) -> str:
    return hashlib.sha256(origin.encode()).hexdigest()[:16]


def item_values(item: ParsedItem, content_hash: str, imported_at: str | None = None) -> tuple[Any, ...]:
    """The columns an insert and an update of an item both set, in both statements' order:
    title, content, content_hash, created_at, last_modified, tags, meta, imported_at (now, unless
    given: a batch written in one transaction takes one time)."""
    return (
        item.title,
        item.content,
        content_hash,
        item.created_at,
        item.last_modified,
        _TAGS_JSON(item.tags),
        _JSON(item.meta),
        imported_at or dates.now(),
    )


ONE_CHUNK_CHARS = DEFAULT_CHUNK_TOKENS * DEFAULT_CHARS_PER_TOKEN
"""Content this long or shorter is one chunk (`chunk_text`'s, or the one an empty body gets)."""


def chunk_rows(rowid: int | None, item_id: str, item: ParsedItem) -> list[tuple[Any, ...]]:
    """The item's chunk rows: (item rowid, index, chunk uuid, field, start, end, title, body,
    meta JSON). Every store writes these (SQLite here, PostgreSQL in `postgres.writing`)."""
    spans = item.chunks
    if spans is None and len(item.content) <= ONE_CHUNK_CHARS:  # most notes: all of it, no chunker
        spans = [ChunkSpan(0, len(item.content))]
    elif spans is None:
        # An item with no body (a note of only front matter) still gets one chunk, so its
        # title is searchable.
        spans = [ChunkSpan(c.start, c.end) for c in chunk_text(item.content)] or [
            ChunkSpan(0, len(item.content))
        ]
    rows = []
    for index, span in enumerate(spans):
        body = item.content[span.start : span.end]
        uuid = hashlib.sha256(f"{item_id}\x00{span.field or ''}\x00{body}".encode()).hexdigest()[:24]
        meta = _JSON(span.meta) if span.meta else "{}"  # most chunks have no meta of their own
        rows.append((rowid, index, uuid, span.field, span.start, span.end, item.title, body, meta))
    return rows
