"""One user's view of one source in the PostgreSQL item store, as the search and get tools read it.

`PgItems` is what the server hands a source's tools instead of its SQLite `Database` when
`item_store = "postgresql"`: the store's pool, the authenticated user (never a tool argument)
and the source. Every statement runs in a transaction made the user's by `as_user` (row-level
security) and binds the user id besides.

Rows come back as `PgRow`: read by column name (or position), `keys()` and iteration, as
`aiosqlite.Row` is, with the SQLite tables' column names (a chunk's `item` is `item_rowid`;
`tags` and `meta` are JSON text), so `search/results.py`, the sources' result builders and
`reading.py` work on them unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ....search.query import ParsedQuery
from ...db import validate_user_id
from ..bm25 import Restriction, rank
from ..pool import PgDatabase, read_as
from .dialect import to_postgres

ITEM_COLUMNS = """i.id, i.item_id, i.origin, i.source_path, i.title, i.content_hash, i.created_at,
    i.last_modified, i.version, i.tags::text AS tags, i.meta::text AS meta, i.imported_at"""
"""The item columns a search result reads, in the order of the SQLite page's (`lexical/sql.py`)."""
FULL_ITEM_COLUMNS = """i.id, i.item_id, i.origin, i.source_path, i.title, i.content, i.content_hash,
    i.created_at, i.last_modified, i.version, i.tags::text AS tags, i.meta::text AS meta, i.imported_at"""
CHUNK_COLUMNS = """c.id, c.item AS item_rowid, c.chunk_index, c.chunk_uuid, c.field, c.start_offset,
    c.end_offset, c.title, c.body, c.meta::text AS meta"""
HITS_SQL = f"""SELECT {ITEM_COLUMNS}, {CHUNK_COLUMNS}
    FROM unnest(%s::bigint[], %s::bigint[]) AS p(item, chunk)
    JOIN pg_items AS i ON i.user_id = %s AND i.source = %s AND i.id = p.item
    JOIN pg_chunks AS c ON c.user_id = %s AND c.source = %s AND c.id = p.chunk"""
"""Search hits' items and chunks in one round trip: each row the item's columns, then the chunk's."""
ITEM_BY_ID_SQL = f"""SELECT {FULL_ITEM_COLUMNS} FROM pg_items AS i
    WHERE i.user_id = %s AND i.source = %s AND i.item_id = %s"""
CHUNKS_OF_ITEM_SQL = f"""SELECT {CHUNK_COLUMNS} FROM pg_chunks AS c
    WHERE c.user_id = %s AND c.source = %s AND c.item = %s ORDER BY c.chunk_index"""
ANCHOR_WEIGHTS = (1.0, 1.0)
"""A get's anchor is ranked by FTS5's `bm25()` without weights (`lexical.sql.build_anchor_sql`)."""


class PgRow:
    """A row read by name (the first column of that name, as sqlite3.Row) or by position."""

    __slots__ = ("_index", "_names", "_values", "passages")

    def __init__(self, names: Sequence[str], values: Sequence[Any]) -> None:
        self._names = list(names)
        self._values = tuple(values)
        self.passages: list[PgRow] = []
        """A search hit's further passages (`per_item`), in the order they follow it."""
        self._index: dict[str, int] = {}
        for n, name in enumerate(self._names):
            self._index.setdefault(name, n)

    def __getitem__(self, key: str | int) -> Any:
        if isinstance(key, int):
            return self._values[key]
        return self._values[self._index[key]]

    def keys(self) -> list[str]:
        return list(self._names)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"PgRow({dict(zip(self._names, self._values, strict=True))!r})"

    def joined(self, names: Sequence[str], values: Sequence[Any]) -> PgRow:
        """This row followed by more columns."""
        return PgRow([*self._names, *names], [*self._values, *values])


@dataclass(frozen=True)
class PgItems:
    """`user_id`'s items of `source` in the PostgreSQL store `pg`. `path` is where the user's
    SQLite database of the source would be: the user's folder, where their glossary lives."""

    item_store: ClassVar[str] = "postgresql"
    """How the sources tell this from a SQLite `Database` without importing psycopg."""
    pg: PgDatabase
    user_id: str
    source: str
    path: Path

    def __post_init__(self) -> None:
        validate_user_id(self.user_id)

    async def rows(self, sql: str, params: Sequence[Any]) -> list[PgRow]:
        """`sql` (its first two parameters the user id and the source) as the user."""
        return await self._run(sql, (self.user_id, self.source, *params))

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[PgRow]:
        """A source's own SQLite statement on its tables, rewritten for this store (`dialect.py`)."""
        return await self._run(to_postgres(sql), params)

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> PgRow | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def _run(self, sql: str, params: Sequence[Any]) -> list[PgRow]:
        names, rows = await read_as(self.pg, self.user_id, sql, tuple(params))  # one round trip
        return [PgRow(names, row) for row in rows]

    async def hits(
        self, item_rowids: Sequence[int], chunk_rowids: Sequence[int]
    ) -> dict[int, tuple[PgRow, PgRow]]:
        """Each hit's item row and chunk row, by chunk rowid (a hit replaced since it was ranked
        is missing)."""
        user, source = self.user_id, self.source
        rows = await self._run(HITS_SQL, (list(item_rowids), list(chunk_rowids), user, source, user, source))
        split = len(ITEM_COLUMNS.split(","))
        out: dict[int, tuple[PgRow, PgRow]] = {}
        for row in rows:
            names, values = row.keys(), tuple(row)
            chunk = PgRow(names[split:], values[split:])
            out[int(chunk["id"])] = (PgRow(names[:split], values[:split]), chunk)
        return out

    async def item(self, item_id: str) -> PgRow | None:
        rows = await self.rows(ITEM_BY_ID_SQL, (item_id,))
        return rows[0] if rows else None

    async def chunks_of(self, item_rowid: int) -> list[PgRow]:
        return await self.rows(CHUNKS_OF_ITEM_SQL, (item_rowid,))

    async def best_chunk(self, query: ParsedQuery, item_rowid: int) -> int | None:
        """The rowid of the item's chunk that `query` ranks best (bm25, as a get's anchor on
        SQLite), or None when no chunk of it matches a scored term."""
        only = Restriction("scored.item = %(anchor_item)s", params={"anchor_item": item_rowid})
        ranking = await rank(self.pg, self.source, self.user_id, query, 1, ANCHOR_WEIGHTS, only)
        if ranking is None or not len(ranking.ranked.chunk_rowids):
            return None
        return int(ranking.ranked.chunk_rowids[0])
