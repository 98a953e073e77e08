"""The dense retrieve and hybrid fuse stages over the PostgreSQL item store.

The retriever reads the caller's vectors of the source from PostgreSQL
(`storage/postgres/vectors.nearest`: pgvector's HNSW index, `<=>` ordered, or an exact scan
without the extension): the best `retriever.POOL` items, each by its best window, with their
exact cosines. The fuser first learns the cosines of bm25's candidates the embeddings did not
return (`vectors.cosines`), then fuses as on SQLite (`fusion.HybridFuser`: the same scores and
order) and reads the page's rows from PostgreSQL (`PgStore.ranked_page`). So a hybrid
or semantic answer on PostgreSQL is the SQLite one, unless the approximate index misses a
near item.

It answers when the SQLite stage would (`retriever.skipped_because`), and also passes, saying
why, while some of the source's chunks lack vectors (`degraded`, as SQLite while embedding)
and when the search has filters (not on PostgreSQL's dense stage yet).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ....storage.postgres.embeddings import vectors as pg_vectors
from ....storage.postgres.store import PgStore
from ...query import ParsedQuery
from ...request import Found, SearchContext
from ..embedder import Vectors, embedder, unavailable
from ..fusion import HybridFuser
from ..index import Floats, Ints
from ..query_vectors import QUERY_VECTORS
from ..retriever import FILTERED_POOL, POOL, DenseFound, building_hint, lexical_instead, skipped_because
from .indexing import COMPLETE_KEY

COVERAGE_TTL_S = 30.0
BUILDING_TTL_S = 5.0
"""How long an incomplete coverage is believed: a search of a source not embedded yet (embedding
off, or under way) reads one row instead of counting every chunk and vector."""
FILTERS_HINT = "semantic search with filters is not on the PostgreSQL item store yet; results are lexical"


@dataclass
class PgHits:
    """One query's dense answer from PostgreSQL: items by position (the nearest first, bm25's
    other candidates appended by `learn`), each one's best cosine and chunk."""

    items: Ints
    best: Floats
    chunks: Ints
    query: Vectors = field(default_factory=lambda: np.zeros(0, np.float32))

    def positions(self, item_rowids: list[int]) -> dict[int, int]:
        """Where each of these items is (items without vectors are left out)."""
        known = {int(item): n for n, item in enumerate(self.items.tolist())}
        return {i: known[i] for i in item_rowids if i in known}

    def best_chunk(self, position: int, cosines: Floats) -> int:
        return int(self.chunks[position])

    async def learn(self, items: PgStore, item_rowids: list[int]) -> None:
        """Read the best cosine of those of `item_rowids` not known yet."""
        known = set(self.items.tolist())
        unknown = sorted({i for i in item_rowids if i not in known})
        found = await pg_vectors.cosines(items.pg, items.user_id, items.source, self.query, unknown)
        self._add(found)

    def _add(self, found: Sequence[pg_vectors.Nearest]) -> None:
        self.items = np.concatenate([self.items, np.array([n.item for n in found], dtype=np.int64)])
        self.best = np.concatenate([self.best, np.array([n.cosine for n in found], dtype=np.float32)])
        self.chunks = np.concatenate([self.chunks, np.array([n.chunk for n in found], dtype=np.int64)])


def hits_of(found: Sequence[pg_vectors.Nearest], query: Vectors) -> PgHits:
    hits = PgHits(np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0, np.int64), query)
    hits._add(found)
    return hits


class PgDenseRetriever:
    """The dense stage from the PostgreSQL store's vectors."""

    async def retrieve(self, ctx: SearchContext, query: ParsedQuery) -> Found | None:
        if not ctx.dense:
            return None
        items = ctx.store
        assert isinstance(items, PgStore)  # this stage runs only on the PostgreSQL store
        reason = skipped_because(ctx)
        if reason is None and ctx.request.filters:
            return lexical_instead(ctx, FILTERS_HINT)
        if reason is not None:
            if ctx.request.mode != "auto":
                ctx.warnings.append(f"semantic search skipped: {reason}; results are lexical")
            return lexical_instead(ctx, None)
        model = embedder()
        if model is None:
            return lexical_instead(ctx, unavailable())
        cover = await _coverage(items)
        if not cover.chunks:
            return None
        if not cover.complete:
            return lexical_instead(ctx, building_hint(items.pg, cover.percent))
        started = QUERY_VECTORS.start(model, ctx.request.query)
        pool = max(POOL, ctx.depth + 1) * (FILTERED_POOL if ctx.request.filters else 1)
        ctx.pool = pool

        async def search() -> DenseFound:
            vector = await QUERY_VECTORS.wait(started)
            near = await pg_vectors.nearest(items.pg, items.user_id, items.source, vector, pool)
            hits = hits_of(near, vector)
            return DenseFound([], len(near), index=hits, top=list(range(len(near))))

        return DenseFound([], None, searching=search)


class PgHybridFuser(HybridFuser):
    """fuse: `HybridFuser`'s ranking, bm25's candidates' cosines read first, the page from
    PostgreSQL."""

    async def fuse(self, ctx: SearchContext, query: ParsedQuery, found: Sequence[Found]) -> Found:
        dense = next((f for f in found if isinstance(f, DenseFound)), None)
        lexical = next((f for f in found if not isinstance(f, DenseFound)), None)
        if dense is not None:
            dense = await dense.complete()
            if lexical is not None and isinstance(dense.index, PgHits):
                assert isinstance(ctx.store, PgStore)
                await dense.index.learn(ctx.store, [int(row["id"]) for row in lexical.rows])
            found = [f for f in (lexical, dense) if f is not None]
        return await super().fuse(ctx, query, found)


async def _coverage(items: PgStore) -> pg_vectors.Coverage:
    """The source's coverage, remembered while its chunk and token counts stay the same (one row
    read instead of counting every chunk and vector: ~50 ms at 6k chunks, ~230 ms of PostgreSQL
    CPU at 100k), for at most `COVERAGE_TTL_S` seconds once complete and `BUILDING_TTL_S` while
    not (vectors arrive without the counts changing: the percent may lag that long)."""
    known: dict[tuple[str, str], tuple[tuple[int, int], float, pg_vectors.Coverage]]
    known = items.pg.caches.setdefault(COMPLETE_KEY, {})
    key = (items.user_id, items.source)
    now = time.monotonic()
    stamp = await pg_vectors.stamp(items.pg, items.user_id, items.source)
    held = known.get(key)
    if held is not None and held[0] == stamp:
        ttl = COVERAGE_TTL_S if held[2].complete else BUILDING_TTL_S
        if now - held[1] < ttl:
            return held[2]
    cover = await pg_vectors.coverage(items.pg, items.user_id, items.source)
    known[key] = (stamp, now, cover)
    return cover
