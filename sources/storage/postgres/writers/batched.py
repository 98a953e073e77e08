"""A transaction's items written together: three statements for the lot, not three per item.

Written one by one, each item cost three round trips (is it there, insert it, insert its
chunks): at ~4 chunks an item that was most of the import's time once the postings went in
blocks. Here the items' existing rows are read in one statement (`existing`), and a run of new
items goes in with one INSERT of the items and one of all their chunks (`insert_items`,
`chunk_ids`), in the order written, so item and chunk rowids come out as the one-by-one writes
gave them. Arrays travel as literals (`arrays.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...importing import chunk_rows
from ...items import ParsedItem
from ..tokens import Indexed, index
from . import arrays

SELECT_ITEMS_SQL = """SELECT origin, id, item_id, content_hash FROM pg_items
    WHERE user_id = %s AND source = %s AND origin = ANY(%s::text[])"""
INSERT_ITEMS_SQL = """INSERT INTO pg_items (user_id, source, item_id, origin, source_path, title, content,
    content_hash, created_at, last_modified, tags, meta, imported_at)
    SELECT %s, %s, u.item_id, u.origin, u.source_path, u.title, u.content, u.content_hash, u.created_at,
        u.last_modified, u.tags, u.meta, u.imported_at
    FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],
        %s::text[], %s::jsonb[], %s::jsonb[], %s::text[])
        WITH ORDINALITY AS u(item_id, origin, source_path, title, content, content_hash, created_at,
            last_modified, tags, meta, imported_at, o)
    ORDER BY u.o
    RETURNING id, origin"""
"""New items in the order given (their rowids in that order: `nextval` row by row)."""
INSERT_CHUNKS_SQL = """INSERT INTO pg_chunks (user_id, source, item, chunk_index, chunk_uuid, field,
    start_offset, end_offset, title, body, meta, tokens)
    SELECT %s, %s, u.item, u.chunk_index, u.chunk_uuid, u.field, u.start_offset, u.end_offset, u.title,
        u.body, u.meta, u.tokens
    FROM unnest(%s::bigint[], %s::int[], %s::text[], %s::text[], %s::int[], %s::int[], %s::text[],
        %s::text[], %s::jsonb[], %s::int[])
        WITH ORDINALITY AS u(item, chunk_index, chunk_uuid, field, start_offset, end_offset, title, body,
            meta, tokens, o)
    ORDER BY u.o
    RETURNING id, item, chunk_index"""
CHUNK_TEXTS = frozenset({2, 3, 6, 7, 8})
"""Which columns of a chunk row (`importing.chunk_rows`) are texts: uuid, field, title, body, meta."""


async def existing(
    conn: Any, user_id: str, source: str, origins: Sequence[str]
) -> dict[str, tuple[int, str, str]]:
    """The stored (rowid, item id, content hash) of those of `origins` that are stored."""
    found = await conn.execute(SELECT_ITEMS_SQL, (user_id, source, arrays.texts(origins)))
    return {str(r[0]): (int(r[1]), str(r[2]), str(r[3])) for r in await found.fetchall()}


async def insert_items(
    conn: Any, user_id: str, source: str, rows: Sequence[tuple[Any, ...]]
) -> dict[str, int]:
    """Insert new items, each (item id, origin, source path, then `importing.item_values`):
    their rowids by origin."""
    columns = list(zip(*rows, strict=True))
    params = (user_id, source, *(arrays.texts(c) for c in columns))
    cursor = await conn.execute(INSERT_ITEMS_SQL, params)
    return {str(origin): int(rowid) for rowid, origin in await cursor.fetchall()}


async def chunk_ids(
    conn: Any, user_id: str, source: str, rows: Sequence[tuple[Any, ...]], lengths: Sequence[int]
) -> dict[tuple[int, int], int]:
    """Insert chunk rows (`importing.chunk_rows`, their item's rowid first) with their lengths in
    tokens: each chunk's rowid by (item rowid, chunk index)."""
    columns = list(zip(*rows, strict=True))
    literals = [arrays.texts(c) if n in CHUNK_TEXTS else arrays.numbers(c) for n, c in enumerate(columns)]
    cursor = await conn.execute(INSERT_CHUNKS_SQL, (user_id, source, *literals, arrays.numbers(lengths)))
    return {(int(item), int(index)): int(chunk) for chunk, item, index in await cursor.fetchall()}


def chunked(items: Sequence[tuple[str, ParsedItem]]) -> tuple[list[list[tuple[Any, ...]]], Indexed]:
    """Each (item id, item)'s chunk rows, their item's rowid not known yet (None), and the
    chunks' postings (`tokens.index`): the client's work on new items, done in a thread while
    the server inserts them."""
    pieces = [chunk_rows(None, item_id, item) for item_id, item in items]
    return pieces, index([(c[6], c[7]) for piece in pieces for c in piece])
