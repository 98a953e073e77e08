"""The PostgreSQL store's statements. Rows come back as dicts with the SQLite tables' column
names (a chunk's `item` is `item_rowid`; `tags` and `meta` are JSON text), as `Store` says.
"""

from __future__ import annotations

from typing import Any

ITEM_COLUMNS = """i.id, i.item_id, i.origin, i.source_path, i.title, i.content_hash, i.created_at,
    i.last_modified, i.version, i.tags::text AS tags, i.meta::text AS meta, i.imported_at"""
"""The item columns a search result reads, in the order of the SQLite page's (`lexical/sql.py`)."""
FULL_ITEM_COLUMNS = """i.id, i.item_id, i.origin, i.source_path, i.title, i.content, i.content_hash,
    i.created_at, i.last_modified, i.version, i.tags::text AS tags, i.meta::text AS meta, i.imported_at"""
CHUNK_COLUMNS = """c.id, c.item AS item_rowid, c.chunk_index, c.chunk_uuid, c.field, c.start_offset,
    c.end_offset, c.title, c.body, c.meta::text AS meta"""


def names(columns: str) -> tuple[str, ...]:
    """The names the rows of `columns` (a SELECT list) have."""
    return tuple(c.split(" AS ")[-1].split(".")[-1].strip() for c in columns.split(","))


ITEM_NAMES, CHUNK_NAMES = names(ITEM_COLUMNS), names(CHUNK_COLUMNS)
HITS_SQL = f"""SELECT {ITEM_COLUMNS}, {CHUNK_COLUMNS}
    FROM unnest(%s::bigint[], %s::bigint[]) AS p(item, chunk)
    JOIN pg_items AS i ON i.user_id = %s AND i.source = %s AND i.id = p.item
    JOIN pg_chunks AS c ON c.user_id = %s AND c.source = %s AND c.id = p.chunk"""
"""Search hits' items and chunks in one round trip: each row the item's columns, then the chunk's."""
RANKED_HITS_SQL = f"""SELECT r.*, {ITEM_COLUMNS}, {CHUNK_COLUMNS} FROM ({{ranking}}) AS r
    JOIN pg_items AS i ON i.user_id = %(user)s AND i.source = %(source)s AND i.id = r.item
    JOIN pg_chunks AS c ON c.user_id = %(user)s AND c.source = %(source)s AND c.id = r.chunk
    ORDER BY r.score DESC, r.chunk"""
"""`bm25.rank`'s `reading`: each ranked chunk's item and chunk columns after the ranking's six
(the ranking's order), read in the ranking's round trip and snapshot."""
RANKED_COLUMNS = 6
"""The ranking statement's columns (item, chunk, score, matching, bits, total)."""


def split(found: list[tuple[Any, ...]]) -> dict[int, tuple[dict[str, Any], dict[str, Any]]]:
    """Rows of an item's columns then a chunk's (`HITS_SQL`: their names clash) as each hit's
    item row and chunk row, by chunk rowid."""
    cut = len(ITEM_NAMES)
    out: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    for values in found:
        chunk = dict(zip(CHUNK_NAMES, values[cut:], strict=True))
        out[int(chunk["id"])] = (dict(zip(ITEM_NAMES, values[:cut], strict=True)), chunk)
    return out


ITEM_BY_ID_SQL = f"""SELECT {FULL_ITEM_COLUMNS} FROM pg_items AS i
    WHERE i.user_id = %s AND i.source = %s AND i.item_id = %s"""
CHUNKS_OF_ITEM_SQL = f"""SELECT {CHUNK_COLUMNS} FROM pg_chunks AS c
    WHERE c.user_id = %s AND c.source = %s AND c.item = %s ORDER BY c.chunk_index"""
ANCHOR_WEIGHTS = (1.0, 1.0)
"""A get's anchor is ranked by FTS5's `bm25()` without weights (`lexical.sql.build_anchor_sql`)."""
ITEM_BY_TITLE_SQL = f"""SELECT {FULL_ITEM_COLUMNS} FROM pg_items AS i
    WHERE i.user_id = %s AND i.source = %s AND lower(i.title) = lower(%s) ORDER BY i.id LIMIT 1"""
ITEM_BY_ORIGIN_SQL = f"""SELECT {FULL_ITEM_COLUMNS} FROM pg_items AS i
    WHERE i.user_id = %s AND i.source = %s AND i.origin = %s"""
ITEMS_SQL = f"""SELECT {FULL_ITEM_COLUMNS} FROM pg_items AS i
    WHERE i.user_id = %s AND i.source = %s ORDER BY i.id"""
TITLES_SQL = "SELECT item_id, title FROM pg_items WHERE user_id = %s AND source = %s ORDER BY id"
TITLES_OF_SQL = """SELECT item_id, title FROM pg_items
    WHERE user_id = %s AND source = %s AND item_id = ANY(%s::text[])"""
RECENT_SQL = """SELECT item_id, title, last_modified FROM pg_items WHERE user_id = %s AND source = %s
    ORDER BY last_modified DESC, item_id LIMIT %s"""
HAS_CHUNK_SQL = """SELECT 1 FROM pg_chunks AS c JOIN pg_items AS i
    ON i.user_id = c.user_id AND i.source = c.source AND i.id = c.item
    WHERE c.user_id = %s AND c.source = %s AND i.item_id = %s AND c.chunk_uuid = %s"""
COUNTS_SQL = """SELECT meta ->> %s AS value, count(*) AS n FROM pg_items
    WHERE user_id = %s AND source = %s GROUP BY 1 ORDER BY n DESC, value"""
FIELD_SPANS_SQL = """SELECT item AS item_rowid, field, min(start_offset) AS start, max(end_offset) AS "end"
    FROM pg_chunks WHERE user_id = %s AND source = %s AND field = ANY(%s::text[]) GROUP BY item, field"""
