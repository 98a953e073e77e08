"""The dense retrieve stage: the items whose chunks' vectors are closest to the query's.

It answers only when it can answer well: the query's route wants it, the search is by
relevance over whole chunks, the model is installed and every chunk of the source has its
vectors. Otherwise it passes (None), and says why in the response's `provider_hint` when the
caller asked for it or the model or vectors are missing (`degraded`): bm25 answers alone.
When it answers it asks every retriever for a pool of candidates (`ctx.pool`) for the fuser.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...storage.store.sqlite import SqliteStore
from ..background import building
from ..lexical.memory import SYNC_PAGE_ITEMS
from ..query import ParsedQuery
from ..request import Found, SearchContext
from .ann import hits as ann_hits
from .ann.store import AnnIndex
from .embedder import Vectors, embedder, unavailable
from .index import DenseIndex, Floats, Hits, dense_indexes
from .query_vectors import QUERY_VECTORS

POOL = SYNC_PAGE_ITEMS - 1
"""Candidates each retriever gives the fuser (at least the page's depth): bm25's pool (one row
more) is then read on the event loop's thread, not on the database's (`SYNC_PAGE_ITEMS`)."""
FILTERED_POOL = 3
"""With item filters, this many times the pool (some candidates are filtered out)."""
ANN_BUILDING = "the approximate dense index is being built; results are lexical until it is ready"


@dataclass(frozen=True)
class DenseFound(Found):
    """The dense candidates: positions in `index.items`, best first."""

    index: Hits | None = None
    cosines: Floats = field(default_factory=lambda: np.zeros(0, np.float32))
    """Every window's cosine with the query (exact search; empty from the approximate index)."""
    top: list[int] = field(default_factory=list)
    searching: Callable[[], Awaitable[DenseFound]] | None = None
    """The search itself, still to be awaited (`complete`): its query is being embedded."""

    async def complete(self) -> DenseFound:
        """The candidates, once the query's embedding (started by `retrieve`) has ended: the
        fuser awaits this, so bm25 retrieves while the model embeds the query."""
        return await self.searching() if self.searching is not None else self

    @property
    def best(self) -> Floats:
        """Each known item's best cosine, by position (`index.positions` adds items)."""
        return self.index.best if self.index is not None else np.zeros(0, np.float32)


def skipped_because(ctx: SearchContext) -> str | None:
    """Why embeddings cannot rank this search, or None."""
    if ctx.order_by != "relevance":
        return "order_by recent is a date order"
    if ctx.request.columns is not None:
        return "the search is limited to some fields"
    if any(f.on_chunk for f in ctx.request.filters):
        return "a filter applies to parts of items"
    return None


class DenseRetriever:
    """Exact cosine over the source's vectors (`index.py`), or for a large source the nearest
    windows of its approximate index (`ann/`)."""

    async def retrieve(self, ctx: SearchContext, query: ParsedQuery) -> Found | None:
        if not ctx.dense:
            return None
        reason = skipped_because(ctx)
        if reason is not None:
            if ctx.request.mode != "auto":
                ctx.warnings.append(f"semantic search skipped: {reason}; results are lexical")
            return lexical_instead(ctx, None)
        if not isinstance(ctx.store, SqliteStore):  # until the vectors are behind one protocol
            from .pg.retriever import PgDenseRetriever  # psycopg: only with that store

            return await PgDenseRetriever().retrieve(ctx, query)
        model = embedder()
        if model is None:
            return lexical_instead(ctx, unavailable())
        indexes = dense_indexes(ctx.store.db, ctx.source)
        index = await indexes.current()
        cover = indexes.coverage
        if not cover.chunks:
            return None
        if not cover.complete:
            return lexical_instead(ctx, building_hint(ctx.store.db, cover.percent))
        if index is None:
            return lexical_instead(ctx, ANN_BUILDING)
        started = QUERY_VECTORS.start(model, ctx.request.query)
        pool = max(POOL, ctx.depth + 1) * (FILTERED_POOL if ctx.request.filters else 1)
        ctx.pool = pool

        async def search() -> DenseFound:
            return _search(index, await QUERY_VECTORS.wait(started), pool)

        return DenseFound([], None, searching=search)


def _search(index: DenseIndex | AnnIndex, vector: Vectors, pool: int) -> DenseFound:
    if isinstance(index, DenseIndex):
        exact = index.search(vector)
        top = _best(exact.best, pool)
        return DenseFound([], len(top), index=exact, cosines=exact.cosines, top=top)
    found = ann_hits.search(index, vector, pool)
    return DenseFound([], len(found.items), index=found, top=list(range(len(found.items))))


def building_hint(db: Any, percent: int) -> str:
    """Why a source not fully embedded answers lexically (`db`: either store's database)."""
    if building(db):
        return f"dense index {percent} % built; results are lexical until the background embedding ends"
    return f"dense index {percent} % built; results are lexical until `knowledge-mcp embed` ends"


def lexical_instead(ctx: SearchContext, hint: str | None) -> Found | None:
    """Pass, so bm25 answers alone (also with `mode = semantic`); `hint` says why."""
    ctx.lexical = True
    if hint is not None:
        ctx.hints.append(hint)
    return None


def _best(scores: Floats, n: int) -> list[int]:
    """The positions of the `n` highest scores, highest first (ties: lower position first)."""
    cut = np.argpartition(-scores, n - 1)[:n] if len(scores) > n else np.arange(len(scores))
    return [int(p) for p in cut[np.lexsort((cut, -scores[cut]))]]
