"""`PgStore`: the `Store` of one user's items of one source in the PostgreSQL item store.

What the server hands a source's tools with `item_store = "postgresql"`: the store's pool, the
authenticated user (never a tool argument) and the source. Every statement is made the user's
by `pool.read_as` (row-level security, in one round trip) and binds the user id besides.
bm25 is ranked from the postings (`bm25.rank`, `lexical.py`); term statistics come from the
store's counts (`stats.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ...db import validate_user_id
from ...store.filters import meta_key
from ..bm25 import Restriction, rank
from ..embeddings.store import PgVectorStore
from ..pool import PgDatabase, read_as
from ..prepared import prepared
from . import lexical, memory, stats
from . import rows as statements

if TYPE_CHECKING:
    from ....search.lexical.sql import RankedRow, SearchSpec
    from ....search.lexical.term_stats import IndexStats
    from ....search.query import ParsedQuery
    from ....search.request import Found, SearchContext, SearchedSource
    from ...db import Migration
    from ...vector_store import VectorStore
    from ..bm25 import Known

__all__ = ["PgStore"]

Row = dict[str, Any]
SIZES = "sizes"
"""`PgStore.noted` key: the term statistics `index_stats` read, with the terms they count."""


@dataclass(frozen=True)
class PgStore:
    """`user_id`'s items of `source` in the PostgreSQL store `pg`. `path` is where the user's
    SQLite database of the source would be: the user's folder, where their glossary lives."""

    pg: PgDatabase
    user_id: str
    source: str
    path: Path
    noted: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """What this store read a moment ago for the search that follows on it (a store serves one
    call): knowledge_search's term statistics (`index_stats`), which its plan takes instead of
    reading them again (`sizes`)."""

    def __post_init__(self) -> None:
        validate_user_id(self.user_id)

    def vectors(self, source: SearchedSource, migrations: Sequence[Migration] = ()) -> VectorStore:
        return PgVectorStore(self.pg, self.user_id, self.source)

    async def rows(self, sql: str, params: Sequence[Any]) -> list[Row]:
        """`sql` (its first two parameters the user id and the source) as the user."""
        return await self._run(sql, (self.user_id, self.source, *params))

    async def _run(self, sql: str, params: Sequence[Any]) -> list[Row]:
        """`sql` as the user, its rows as dicts by column name."""
        names, rows = await read_as(self.pg, self.user_id, sql, tuple(params))
        return [dict(zip(names, row, strict=True)) for row in rows]

    async def hits(
        self, item_rowids: Sequence[int], chunk_rowids: Sequence[int]
    ) -> dict[int, tuple[Row, Row]]:
        """Each hit's item row and chunk row, by chunk rowid (a hit replaced since it was ranked
        is missing)."""
        user, source = self.user_id, self.source
        ids = (list(item_rowids), list(chunk_rowids))
        sql = prepared(statements.HITS_SQL)
        _, found = await read_as(self.pg, user, sql, (*ids, user, source, user, source))
        return statements.split(found)

    async def item(self, item_id: str) -> Row | None:
        return _first(await self.rows(statements.ITEM_BY_ID_SQL, (item_id,)))

    async def chunks_of(self, item_rowid: int) -> list[Row]:
        return await self.rows(statements.CHUNKS_OF_ITEM_SQL, (item_rowid,))

    async def best_chunk(self, query: ParsedQuery, item_rowid: int) -> int | None:
        """The rowid of the item's chunk that `query` ranks best (bm25, as a get's anchor on
        SQLite), or None when no chunk of it matches a scored term."""
        only = Restriction("scored.item = %(anchor_item)s", params={"anchor_item": item_rowid})
        ranking = await rank(self.pg, self.source, self.user_id, query, 1, statements.ANCHOR_WEIGHTS, only)
        if ranking is None or not len(ranking.ranked.chunk_rowids):
            return None
        return int(ranking.ranked.chunk_rowids[0])

    async def lexical(self, ctx: SearchContext, query: ParsedQuery) -> Found:
        found = await memory.search(self, ctx, query)  # a small source's copy, when current
        return found if found is not None else await lexical.lexical_page(self, ctx, query)

    async def ranked_page(self, ctx: SearchContext, spec: SearchSpec, window: list[RankedRow]) -> list[Any]:
        return await lexical.window_page(self, spec, window)

    async def passages(self, ctx: SearchContext, query: ParsedQuery, rows: list[Any], more: int) -> list[Any]:
        return await lexical.passages(self, ctx, query, rows, more)

    async def index_stats(self, query: ParsedQuery, together: Sequence[str] = ()) -> IndexStats:
        """The counts of `query`'s terms, read with those of the other sources in `together`
        (one round trip for them all: `stats.joint_sizes`), noted for the search that follows."""
        sizes = await stats.joint_sizes(self.pg, self.user_id, self.source, query, together)
        self.noted[SIZES] = (frozenset(query.terms), sizes)
        return sizes[0]

    async def sizes(self, query: ParsedQuery) -> tuple[IndexStats, Known]:
        """`stats.index_sizes` of `query`: those `index_stats` read for this call when they count
        every term of `query` (used once), else read now."""
        noted = self.noted.pop(SIZES, None)
        if noted is not None and noted[0].issuperset(query.terms):
            return cast("tuple[IndexStats, Known]", noted[1])
        return await stats.index_sizes(self.pg, self.user_id, self.source, query)

    async def item_by_title(self, title: str) -> Row | None:
        return _first(await self.rows(statements.ITEM_BY_TITLE_SQL, (title,)))

    async def item_by_origin(self, origin: str) -> Row | None:
        return _first(await self.rows(statements.ITEM_BY_ORIGIN_SQL, (origin,)))

    async def items(self) -> list[Row]:
        return await self.rows(statements.ITEMS_SQL, ())

    async def titles(self, item_ids: Sequence[str] | None = None) -> list[Row]:
        if item_ids is None:
            return await self.rows(statements.TITLES_SQL, ())
        return await self.rows(statements.TITLES_OF_SQL, (list(item_ids),))

    async def recent(self, limit: int) -> list[Row]:
        return await self.rows(statements.RECENT_SQL, (limit,))

    async def has_chunk(self, item_id: str, chunk_uuid: str) -> bool:
        return bool(await self.rows(statements.HAS_CHUNK_SQL, (item_id, chunk_uuid)))

    async def counts_by(self, key: str) -> list[tuple[Any, int]]:
        found = await self._run(statements.COUNTS_SQL, (meta_key(key), self.user_id, self.source))
        return [(row["value"], int(row["n"])) for row in found]

    async def field_spans(self, fields: Sequence[str]) -> list[Row]:
        return await self.rows(statements.FIELD_SPANS_SQL, (list(fields),))


def _first(found: list[Row]) -> Row | None:
    return found[0] if found else None
