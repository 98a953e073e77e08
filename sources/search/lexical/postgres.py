"""The search pipeline over the PostgreSQL item store (`item_store = "postgresql"`).

The retrieve stage ranks with the store's exact bm25 (`storage/postgres/bm25.rank`: FTS5's
formula, weights and left-out common terms) and reads the ranked items' rows and hit chunks with
the SQLite page's column names (`storage/postgres/serving/items.py`), so describe (snippets, matched
terms, calibrated scores) and paging are the SQLite pipeline's, unchanged. The page is ordered as
the SQLite page is (bm25, then newest, then item rowid; `order_by = recent`: newest first).

Source filters restrict the ranking itself (`serving/filters.py`): the top k are cut from the items
that pass. With `per_item` > 1 the retriever also reads each page item's next best matching chunks
(the same bm25, under the same chunk filters), kept on the item's row until `PgPassages` puts them
after it, as `diversify.Passages` does on SQLite. Field-limited search (`columns`) ranks as FTS5's
`{title} : (…)` does (`bm25.Restriction`).

The embeddings (semantic and hybrid) are the dense stage over the store's vectors
(`dense/retriever.py` over `storage/postgres/embeddings/store.py`), fused as on SQLite; the
fused page is read here (`fused_page`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from ...storage.postgres.bm25 import Restriction, rank
from ...storage.postgres.serving.filters import restriction
from ...storage.postgres.serving.items import PgItems, PgRow
from ..dense.fusion import HybridFuser
from ..dense.retriever import DenseRetriever
from ..diversify import interleaved
from ..glossary.expand import GlossaryExpander
from ..pipeline import SearchPipeline
from ..query import ParsedQuery
from ..request import MAX_PER_ITEM, NOTHING, Found, SearchContext
from ..rerank.stage import CrossRanker
from .sql import RankedRow, SearchSpec

RECENT_POOL = 10_000
"""`order_by = recent` orders this many best-ranked matching items by date."""
HIT_COLUMNS = ("chunk_rowid", "b", "n", "total")


PASSAGE_CHUNKS = "scored.item = ANY(%(page_items)s::bigint[]) AND scored.chunk <> ALL(%(taken)s::bigint[])"
"""A passage is another chunk of a page item than those already taken."""


class PgLexicalRetriever:
    """bm25 from the PostgreSQL store: the page's rows, shaped as the SQLite page's."""

    async def retrieve(self, ctx: SearchContext, query: ParsedQuery) -> Found | None:
        if not ctx.lexical:
            return None  # mode semantic, answered by the embeddings
        items = ctx.db
        assert isinstance(items, PgItems)  # this pipeline runs only on the PostgreSQL store
        request, names = ctx.request, list(ctx.request.filter_names)
        recent = ctx.order_by != "relevance"
        want = RECENT_POOL if recent else ctx.depth + 1
        allowed = restriction(request.filters, names, request.columns)
        weights = ctx.source.weights
        ranking = await rank(items.pg, items.source, items.user_id, query, want, weights, allowed)
        if ranking is None or not len(ranking.ranked.item_rowids):
            return NOTHING
        ranked = ranking.ranked
        if recent and ranked.total > RECENT_POOL:
            ctx.warnings.append(
                f"about {ranked.total} items match: the {RECENT_POOL} best are ordered by date; "
                "add a rarer word to order them all"
            )
        rows = await page_rows(items, ranked)
        rows = ordered(rows, recent)[request.offset : ctx.depth + 1]
        more = max(1, min(MAX_PER_ITEM, request.per_item)) - 1
        if more and rows:
            on_chunk = [f for f in request.filters if f.on_chunk]
            passages = restriction(on_chunk, names, request.columns, [PASSAGE_CHUNKS])
            await add_passages(items, query, weights, rows, more, passages)
        norm = request.norm if request.norm is not None else ranking.norm
        return Found(cast(list[Any], rows), int(ranked.total), norm=norm)  # read as aiosqlite rows are


async def add_passages(
    items: PgItems,
    query: ParsedQuery,
    weights: tuple[float, float],
    rows: list[PgRow],
    more: int,
    allowed: Restriction,
) -> None:
    """Up to `more` further matching chunks of each row's item, best first (bm25, then chunk rowid,
    as `diversify.passages_sql`), on the row's `passages`: one ranking of the items' remaining
    chunks per round, each round's best chunk of every item that still has one."""
    taken = [int(r["chunk_rowid"]) for r in rows]
    by_item = {int(r["id"]): r for r in rows}
    left = list(by_item)
    for _ in range(more):
        params = {**allowed.params, "page_items": left, "taken": taken}
        round_ = Restriction(allowed.chunks, allowed.items, params, allowed.columns)
        ranking = await rank(items.pg, items.source, items.user_id, query, len(left), weights, round_)
        if ranking is None or not len(ranking.ranked.item_rowids):
            return
        found = await page_rows(items, ranking.ranked, passage=True)
        for row in found:
            by_item[int(row["id"])].passages.append(row)
        taken += [int(r["chunk_rowid"]) for r in found]
        left = [int(r["id"]) for r in found]


async def page_rows(items: PgItems, ranked: Any, passage: bool = False) -> list[PgRow]:
    """One row per ranked item: its columns, the hit's (`chunk_rowid`, `b`, `n`, `total`), then
    the hit chunk's, as `lexical/sql.py`'s page rows are (`sql.hit_chunk` splits them); a
    `passage` has no `n` and `total`, as `diversify.passages_sql`'s rows."""
    item_ids = [int(i) for i in ranked.item_rowids]
    chunk_ids = [int(c) for c in ranked.chunk_rowids]
    found = await items.hits(item_ids, chunk_ids)
    rows: list[PgRow] = []
    for n, chunk in enumerate(chunk_ids):
        if chunk not in found:
            continue  # replaced between the ranking and the read: the next search has it
        item_row, chunk_row = found[chunk]
        counts = (None, None) if passage else (int(ranked.matching_chunks[n]), int(ranked.total))
        hit = (chunk, float(ranked.bm25[n]), *counts)
        rows.append(item_row.joined(HIT_COLUMNS, hit).joined(chunk_row.keys(), tuple(chunk_row)))
    return rows


def ordered(rows: list[PgRow], recent: bool) -> list[PgRow]:
    """The SQLite page's order: bm25, newest, item rowid (recent: newest, bm25, item rowid). Pure."""
    rows = sorted(rows, key=lambda r: int(r["id"]))
    if recent:
        rows.sort(key=lambda r: float(r["b"]))
        rows.sort(key=lambda r: str(r["last_modified"]), reverse=True)
    else:
        rows.sort(key=lambda r: str(r["last_modified"]), reverse=True)
        rows.sort(key=lambda r: float(r["b"]))
    return rows


class PgPassages:
    """diversify: each page item followed by the passages the retriever read for it (`per_item`)."""

    def diversify(self, ctx: SearchContext, found: Found) -> Found:
        rows = found.rows[: ctx.request.limit]
        extra = [p for row in rows for p in getattr(row, "passages", [])]
        if not extra:
            return found
        page = interleaved(rows, extra) + found.rows[len(rows) :]
        return Found(page, found.total, found.terms_of, found.scores)


async def fused_page(ctx: SearchContext, spec: SearchSpec, window: list[RankedRow]) -> list[Any]:
    """The hybrid fuser's page of its fused `window` from PostgreSQL (`HybridFuser.page`'s
    PostgreSQL twin, until the item Store reads one ranked-window page for both stores)."""
    items = cast(PgItems, ctx.db)
    rows = await page_rows(items, _Window(window))
    return list(ordered(rows, False)[spec.offset : spec.offset + spec.limit + 1])


@dataclass(frozen=True)
class _Window:
    """The fused window in the shape `page_rows` reads (bm25's `Ranked`): the fused score's
    negative as `b`, as the SQLite page's."""

    ranked: list[RankedRow]

    @property
    def item_rowids(self) -> list[int]:
        return [r[0] for r in self.ranked]

    @property
    def chunk_rowids(self) -> list[int]:
        return [r[1] for r in self.ranked]

    @property
    def bm25(self) -> list[float]:
        return [r[2] for r in self.ranked]

    @property
    def matching_chunks(self) -> list[int]:
        return [r[3] for r in self.ranked]

    @property
    def total(self) -> int:
        return len(self.ranked)


PG_PIPELINE = SearchPipeline(
    expanders=(GlossaryExpander(),),
    retrievers=(DenseRetriever(), PgLexicalRetriever()),
    fuser=HybridFuser(page=fused_page),
    rerankers=(CrossRanker(),),
    diversifier=PgPassages(),
)
"""The stages over the PostgreSQL store: the default pipeline's, with bm25 and the vectors from
PostgreSQL."""
