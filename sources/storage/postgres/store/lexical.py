"""bm25 pages of the PostgreSQL store: `PgStore.lexical`, `ranked_page` and `passages`.

The ranking is the store's exact bm25 (`storage/postgres/bm25.rank`: FTS5's formula, weights and
left-out common terms); the ranked items' rows and hit chunks are read in one round trip and
ordered as the SQLite page is (bm25, then newest, then item rowid; `order_by = recent`: newest
first). Source filters restrict the ranking itself (`filters.py`): the top k are cut from the
items that pass. Field-limited search (`columns`) ranks as FTS5's `{title} : (…)` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ....search.lexical.sql import RankedRow, SearchSpec
from ....search.query import ParsedQuery
from ....search.request import NOTHING, Found, SearchContext
from ..bm25 import Restriction, rank
from . import rows as statements
from .filters import restriction
from .page import Window, ordered, page_rows
from .planned import planned_page

if TYPE_CHECKING:
    from . import PgStore

RECENT_POOL = 10_000
"""`order_by = recent` orders this many best-ranked matching items by date."""
PASSAGE_CHUNKS = "scored.item = ANY(%(page_items)s::bigint[]) AND scored.chunk <> ALL(%(taken)s::bigint[])"
"""A passage is another chunk of a page item than those already taken."""


async def lexical_page(store: PgStore, ctx: SearchContext, query: ParsedQuery) -> Found:
    """The page's rows ranked by bm25 from the store, shaped as the SQLite page's: a large source
    searched by relevance as FTS5's plan searches it (`planned.py`), else every match ranked."""
    request = ctx.request
    if ctx.order_by == "relevance" and not request.filters and request.columns is None:
        found = await planned_page(store, ctx, query)
        if found is not None:
            return found
    recent = ctx.order_by != "relevance"
    want = RECENT_POOL if recent else ctx.depth + 1
    allowed = restriction(request.filters, request.columns)
    weights, hits = ctx.source.weights, statements.RANKED_HITS_SQL
    ranking = await rank(store.pg, store.source, store.user_id, query, want, weights, allowed, hits)
    if ranking is None or not len(ranking.ranked.item_rowids):
        return NOTHING
    ranked = ranking.ranked
    if recent and ranked.total > RECENT_POOL:
        ctx.warnings.append(
            f"about {ranked.total} items match: the {RECENT_POOL} best are ordered by date; "
            "add a rarer word to order them all"
        )
    rows = await page_rows(store, ranked, read=ranking.rows)
    rows = ordered(rows, recent)[request.offset : ctx.depth + 1]
    return Found(list[Any](rows), int(ranked.total), norm=ranking.norm)


async def window_page(store: PgStore, spec: SearchSpec, window: list[RankedRow]) -> list[Any]:
    """The page rows of the fused `window` (the fused score's negative as `b`), ordered as the
    SQLite page's."""
    rows = await page_rows(store, Window(window))
    return list(ordered(rows, False)[spec.offset : spec.offset + spec.limit + 1])


async def passages(
    store: PgStore, ctx: SearchContext, query: ParsedQuery, rows: Sequence[Any], more: int
) -> list[Any]:
    """Up to `more` further matching chunks of each row's item, best first (bm25, then chunk rowid,
    as the SQLite store's passages): one ranking of the items' remaining chunks per round, each
    round's best chunk of every item that still has one."""
    request = ctx.request
    on_chunk = [f for f in request.filters if f.on_chunk]
    allowed = restriction(on_chunk, request.columns, [PASSAGE_CHUNKS])
    taken = [int(r["chunk_rowid"]) for r in rows]
    left = [int(r["id"]) for r in rows]
    hits = statements.RANKED_HITS_SQL
    out: list[Any] = []
    for _ in range(more):
        params = {**allowed.params, "page_items": left, "taken": taken}
        round_ = Restriction(allowed.chunks, allowed.items, params, allowed.columns)
        weights = ctx.source.weights
        ranking = await rank(store.pg, store.source, store.user_id, query, len(left), weights, round_, hits)
        if ranking is None or not len(ranking.ranked.item_rowids):
            break
        found = await page_rows(store, ranking.ranked, passage=True, read=ranking.rows)
        out += found
        taken += [int(r["chunk_rowid"]) for r in found]
        left = [int(r["id"]) for r in found]
    return out
