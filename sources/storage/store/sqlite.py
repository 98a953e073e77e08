"""`SqliteStore`: the `Store` of one user's SQLite file of one source.

bm25 comes from the source's FTS5 index: its exact in-memory copy when that can answer
(`search/lexical/memory.py`), else FTS5 under a per-query plan (`search/lexical/fts.py`). Page
rows are read with the search SQL built in `search/lexical/sql.py`; passages are read on the
event loop's thread from the source's read-only connection (`memory_index.read_here`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...search.dense.sqlite.store import SqliteVectorStore
from ...search.lexical.filters import clauses
from ...search.lexical.fts import FtsRetriever, expansions
from ...search.lexical.memory import MemoryRetriever, counted_terms, memory_indexes, ranked_page
from ...search.lexical.plan import estimate_keys
from ...search.lexical.sql import build_anchor_sql, build_passages_sql, column_match, ident
from ...search.lexical.term_stats import IndexStats, term_stats
from ..db import Database, Migration
from . import Hit
from .filters import meta_key

NO_CHUNKS = IndexStats(0, 0, {})
"""The counts of a source without chunks: nothing to add to knowledge_search's shared scale (its
own scale is never asked for, having no rows to score)."""

if TYPE_CHECKING:
    from ...search.lexical.sql import RankedRow, SearchSpec
    from ...search.query import ParsedQuery
    from ...search.request import Found, SearchContext, SearchedSource
    from ..vector_store import VectorStore

ITEM_BY_ID_SQL = "SELECT * FROM {p}_items WHERE item_id = ?"
CHUNKS_OF_ITEM_SQL = "SELECT * FROM {p}_chunks WHERE item_rowid = ? ORDER BY chunk_index"
ITEM_BY_TITLE_SQL = "SELECT * FROM {p}_items WHERE lower(title) = lower(?) ORDER BY id LIMIT 1"
ITEM_BY_ORIGIN_SQL = "SELECT * FROM {p}_items WHERE origin = ?"
ITEMS_SQL = "SELECT * FROM {p}_items ORDER BY id"
TITLES_SQL = "SELECT item_id, title FROM {p}_items ORDER BY id"
TITLES_OF_SQL = "SELECT item_id, title FROM {p}_items WHERE item_id IN ({marks})"
RECENT_SQL = (
    "SELECT item_id, title, last_modified FROM {p}_items ORDER BY last_modified DESC, item_id LIMIT ?"
)
HAS_CHUNK_SQL = """SELECT 1 FROM {p}_chunks c JOIN {p}_items i ON c.item_rowid = i.id
WHERE i.item_id = ? AND c.chunk_uuid = ?"""
COUNTS_SQL = """SELECT json_extract(meta, '$.{key}') AS value, COUNT(*) AS n
FROM {p}_items GROUP BY 1 ORDER BY n DESC, value"""
FIELD_SPANS_SQL = """SELECT item_rowid, field, min(start_offset) AS start, max(end_offset) AS end
FROM {p}_chunks WHERE field IN ({marks}) GROUP BY item_rowid, field"""
MEMORY = MemoryRetriever()
FTS = FtsRetriever()


@dataclass(frozen=True)
class SqliteStore:
    """Source `source`'s items in the user's SQLite database `db`."""

    db: Database
    source: str

    @property
    def path(self) -> Path:
        return self.db.path

    def vectors(self, source: SearchedSource, migrations: Sequence[Migration] = ()) -> VectorStore:
        return SqliteVectorStore(self.db, source, migrations)

    async def item(self, item_id: str) -> Any:
        return await self.db.fetchone(ITEM_BY_ID_SQL.format(p=self.source), (item_id,))

    async def chunks_of(self, item_rowid: int) -> list[Any]:
        return await self.db.fetchall(CHUNKS_OF_ITEM_SQL.format(p=self.source), (item_rowid,))

    async def best_chunk(self, query: ParsedQuery, item_rowid: int) -> int | None:
        row = await self.db.fetchone(build_anchor_sql(self.source), (query.match_expression(), item_rowid))
        return int(row[0]) if row is not None else None

    async def lexical(self, ctx: SearchContext, query: ParsedQuery) -> Found:
        found = await MEMORY.retrieve(self.db, ctx, query)
        if found is None:
            found = await FTS.retrieve(self.db, ctx, query)
        return replace(found, rows=hits(found.rows))

    async def ranked_page(self, ctx: SearchContext, spec: SearchSpec, window: list[RankedRow]) -> list[Hit]:
        return hits(await ranked_page(memory_indexes(self.db, ctx.source), spec, window))

    async def passages(self, ctx: SearchContext, query: ParsedQuery, rows: list[Any], more: int) -> list[Hit]:
        """The passages, or none when the database has no file to read them from here (in memory)."""
        indexes = memory_indexes(self.db, ctx.source)
        if not indexes.can_read_here():
            return []
        request, weights = ctx.request, ctx.source.weights
        chunk_where, chunk_params = clauses([f for f in request.filters if f.on_chunk])
        sql = build_passages_sql(self.source, weights, len(rows), len(rows), chunk_where)
        params = [
            column_match(query.match_expression(), request.columns),
            *(row["id"] for row in rows),
            *(row["chunk_rowid"] for row in rows),
            *chunk_params,
            more,
        ]
        return hits(indexes.read_here(sql, params))

    async def index_stats(self, query: ParsedQuery, together: Sequence[str] = ()) -> IndexStats:
        """Each source's own file answers for it (`together` is not read here). A small source's
        current memory copy counts the terms (its prefixes too) as FTS5 would, without FTS5. A
        prefix of a large source is counted as the OR of its index terms when the source's
        vocabulary is current, as its search counts it (`fts.py`): the same rows, read faster,
        and the same cached count whichever asks first (knowledge_search asks before the search
        does). A source whose current copy holds no chunk counts nothing, reading nothing: four
        of five sources for a user whose knowledge is notes, asked by every knowledge_search."""
        indexes = self.db.caches.get("memory_index")  # made by the source's first search
        copy = indexes.current() if indexes is not None and indexes.index is not None else None
        if copy is not None and not copy.chunks:
            return NO_CHUNKS
        keys = [k for t in query.terms for k in estimate_keys(t)]
        counted = counted_terms(copy, query.terms) if copy is not None else None
        if copy is not None and counted is not None:
            return await term_stats(self.db, self.source).counted_in(self.db, copy, counted)
        vocabulary = indexes.terms() if indexes is not None and any(t.prefix for t in query.terms) else None
        same_rows = expansions(query.terms, vocabulary) if vocabulary is not None else None
        return await term_stats(self.db, self.source).lookup(self.db, keys, same_rows)

    async def item_by_title(self, title: str) -> Any:
        return await self.db.fetchone(self._sql(ITEM_BY_TITLE_SQL), (title,))

    async def item_by_origin(self, origin: str) -> Any:
        return await self.db.fetchone(self._sql(ITEM_BY_ORIGIN_SQL), (origin,))

    async def items(self) -> list[Any]:
        return await self.db.fetchall(self._sql(ITEMS_SQL))

    async def titles(self, item_ids: Sequence[str] | None = None) -> list[Any]:
        if item_ids is None:
            return await self.db.fetchall(self._sql(TITLES_SQL))
        marks = ",".join("?" * len(item_ids))
        return await self.db.fetchall(self._sql(TITLES_OF_SQL, marks=marks), list(item_ids))

    async def recent(self, limit: int) -> list[Any]:
        return await self.db.fetchall(self._sql(RECENT_SQL), (limit,))

    async def has_chunk(self, item_id: str, chunk_uuid: str) -> bool:
        return await self.db.fetchone(self._sql(HAS_CHUNK_SQL), (item_id, chunk_uuid)) is not None

    async def counts_by(self, key: str) -> list[tuple[Any, int]]:
        rows = await self.db.fetchall(self._sql(COUNTS_SQL, key=meta_key(key)))
        return [(row[0], int(row[1])) for row in rows]

    async def field_spans(self, fields: Sequence[str]) -> list[Any]:
        marks = ",".join("?" * len(fields))
        return await self.db.fetchall(self._sql(FIELD_SPANS_SQL, marks=marks), list(fields))

    def _sql(self, template: str, **kw: str) -> str:
        return template.format(p=ident(self.source), **kw)


def hits(rows: Sequence[Any]) -> list[Hit]:
    """Page rows as `Hit`s: each row is the item's columns, the hit's (`chunk_rowid` … `total`),
    then the hit chunk's (`lexical/sql.py`'s page and passages)."""
    if not rows:
        return []
    names = list(rows[0].keys())
    first, last = names.index("chunk_rowid"), names.index("total") + 1
    items, chunks = names[:first], names[last:]
    out = []
    b, n, total = names.index("b"), names.index("n"), last - 1
    for row in rows:
        values = tuple(row)
        chunk = dict(zip(chunks, values[last:], strict=True))
        out.append(Hit(zip(items, values[:first], strict=True), chunk, values[b], values[n], values[total]))
    return out
