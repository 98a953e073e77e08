"""The dense retrieve stage: the items whose chunks' vectors are closest to the query's.

It answers only when it can answer well: the query's route wants it, the search is by
relevance over whole chunks, the model is installed (and loaded: while the server still loads
it, `embedder.loading`) and every chunk of the source has its vectors. Otherwise it passes
(None), and says why in the response's `provider_hint` when the caller asked for it or the
model or vectors are missing (`degraded`): bm25 answers alone.
When it answers it asks every retriever for a pool of candidates (`ctx.pool`) for the fuser.
The vectors are the source's `VectorStore` (`Store.vectors`: SQLite or PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np

from ...storage.vector_store import Coverage, DenseHits, Floats, VectorStore
from ..background import building
from ..lexical.memory import SYNC_PAGE_ITEMS
from ..query import ParsedQuery
from ..request import Found, SearchContext
from .embedder import LOADING_HINT, embedder, loading, unavailable
from .query_vectors import QUERY_VECTORS

POOL = SYNC_PAGE_ITEMS - 1
"""Candidates each retriever gives the fuser (at least the page's depth): bm25's pool (one row
more) is then read on the event loop's thread, not on the database's (`SYNC_PAGE_ITEMS`)."""
FILTERED_POOL = 3
"""With item filters, this many times the pool (some candidates are filtered out)."""
ANN_BUILDING = "the approximate dense index is being built; results are lexical until it is ready"
FILTERS_HINT = "semantic search with filters is not on the PostgreSQL item store yet; results are lexical"


@dataclass(frozen=True)
class DenseFound(Found):
    """The dense candidates: `hits`' items, the first `len(top)` of them nearest first."""

    hits: DenseHits | None = None
    store: VectorStore | None = None
    """Where the fuser reads the cosines of bm25's other candidates (`VectorStore.cosines`)."""
    top: list[int] = field(default_factory=list)
    searching: Callable[[], Awaitable[DenseFound]] | None = None
    """The search itself, still to be awaited (`complete`): its query is being embedded."""

    async def complete(self) -> DenseFound:
        """The candidates, once the query's embedding (started by `retrieve`) has ended: the
        fuser awaits this, so bm25 retrieves while the model embeds the query."""
        return await self.searching() if self.searching is not None else self

    @property
    def best(self) -> Floats:
        """Each known item's best cosine, by position (`VectorStore.cosines` adds items)."""
        return self.hits.best if self.hits is not None else np.zeros(0, np.float32)


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
    """The items nearest the query in the source's vectors (`VectorStore.nearest`)."""

    async def retrieve(self, ctx: SearchContext, query: ParsedQuery) -> Found | None:
        if not ctx.dense:
            return None
        store = ctx.store.vectors(ctx.source)
        reason = skipped_because(ctx)
        if reason is None and ctx.request.filters and not store.filters:
            return lexical_instead(ctx, FILTERS_HINT)
        if reason is not None:
            if ctx.request.mode != "auto":
                ctx.warnings.append(f"semantic search skipped: {reason}; results are lexical")
            return lexical_instead(ctx, None)
        still_loading = loading()  # the server loads the model at start: never wait for it
        model = None if still_loading else embedder()
        if model is None and not still_loading:
            return lexical_instead(ctx, unavailable())
        cover, searchable = await store.look()
        if not cover.chunks:
            return None
        if not cover.complete:
            return lexical_instead(ctx, building_hint(store, cover))
        if not searchable:
            return lexical_instead(ctx, ANN_BUILDING)
        if model is None:
            return lexical_instead(ctx, LOADING_HINT)
        started = QUERY_VECTORS.start(model, ctx.request.query)
        pool = max(POOL, ctx.depth + 1) * (FILTERED_POOL if ctx.request.filters else 1)
        ctx.pool = pool

        async def search() -> DenseFound:
            hits = await store.nearest(await QUERY_VECTORS.wait(started), pool)
            top = list(range(len(hits.items)))
            return DenseFound([], len(top), hits=hits, store=store, top=top)

        return DenseFound([], None, store=store, searching=search)


def building_hint(store: VectorStore, cover: Coverage) -> str:
    """Why a source not fully embedded answers lexically, and how far its vectors are:
    `dense index 20 % built (vectors: 1,150 of 5,750 chunks); …`."""
    built = f"dense index {cover.percent} % built (vectors: {cover.embedded:,} of {cover.chunks:,} chunks)"
    if building(store):
        return f"{built}; results are lexical until the background embedding ends"
    return f"{built}; results are lexical until `knowledge-mcp embed` ends"


def lexical_instead(ctx: SearchContext, hint: str | None) -> Found | None:
    """Pass, so bm25 answers alone (also with `mode = semantic`); `hint` says why."""
    ctx.lexical = True
    if hint is not None:
        ctx.hints.append(hint)
    return None
