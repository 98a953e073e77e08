"""The search pipeline over the PostgreSQL item store (`item_store = "postgresql"`).

The retrieve stage ranks with the store's exact bm25 (`storage/postgres/bm25.rank`: FTS5's
formula, weights and left-out common terms) and reads the ranked items' rows and hit chunks with
the SQLite page's column names (`storage/postgres/serving/items.py`), so describe (snippets, matched
terms, calibrated scores) and paging are the SQLite pipeline's, unchanged. The page is ordered as
the SQLite page is (bm25, then newest, then item rowid; `order_by = recent`: newest first).

The embeddings (semantic and hybrid) are the dense stage over the store's vectors
(`dense/pg/retriever.py`), fused as on SQLite. Not on PostgreSQL yet, each said in the response
rather than silently dropped: an item's further passages (`per_item`), source filters and
field-limited search (refused, naming the filter).
"""

from __future__ import annotations

from typing import Any, cast

from ...errors import InvalidArgumentError
from ...storage.postgres.bm25 import rank
from ...storage.postgres.serving.items import PgItems, PgRow
from ..dense.pg.retriever import PgDenseRetriever, PgHybridFuser
from ..glossary.expand import GlossaryExpander
from ..pipeline import SearchPipeline
from ..query import ParsedQuery
from ..request import NOTHING, Found, SearchContext
from ..rerank.stage import CrossRanker
from ..stages import AllItems

RECENT_POOL = 10_000
"""`order_by = recent` orders this many best-ranked matching items by date."""
HIT_COLUMNS = ("chunk_rowid", "b", "n", "total")


def refusal(ctx: SearchContext, filter_names: list[str]) -> str | None:
    """Why this search cannot run on PostgreSQL (a filter or field limit), or None."""
    if ctx.request.columns is not None:
        return "searching only some fields is not supported on the PostgreSQL item store yet"
    if ctx.request.filters:
        named = ", ".join(filter_names) or "source filters"
        return f"{named}: not supported on the PostgreSQL item store yet; search without it"
    return None


class PgLexicalRetriever:
    """bm25 from the PostgreSQL store: the page's rows, shaped as the SQLite page's."""

    async def retrieve(self, ctx: SearchContext, query: ParsedQuery) -> Found | None:
        if not ctx.lexical:
            return None  # mode semantic, answered by the embeddings
        items = ctx.db
        assert isinstance(items, PgItems)  # this pipeline runs only on the PostgreSQL store
        reason = refusal(ctx, list(ctx.request.filter_names))
        if reason is not None:
            raise InvalidArgumentError("filters", reason)
        _note_unsupported(ctx)
        recent = ctx.order_by != "relevance"
        want = RECENT_POOL if recent else ctx.depth + 1
        ranking = await rank(items.pg, items.source, items.user_id, query, want, ctx.source.weights)
        if ranking is None or not len(ranking.ranked.item_rowids):
            return NOTHING
        ranked = ranking.ranked
        if recent and ranked.total > RECENT_POOL:
            ctx.warnings.append(
                f"about {ranked.total} items match: the {RECENT_POOL} best are ordered by date; "
                "add a rarer word to order them all"
            )
        rows = await page_rows(items, ranked)
        rows = ordered(rows, recent)[ctx.request.offset : ctx.depth + 1]
        norm = ctx.request.norm if ctx.request.norm is not None else ranking.norm
        return Found(cast(list[Any], rows), int(ranked.total), norm=norm)  # read as aiosqlite rows are


async def page_rows(items: PgItems, ranked: Any) -> list[PgRow]:
    """One row per ranked item: its columns, the hit's (`chunk_rowid`, `b`, `n`, `total`), then
    the hit chunk's, as `lexical/sql.py`'s page rows are (`sql.hit_chunk` splits them)."""
    item_ids = [int(i) for i in ranked.item_rowids]
    chunk_ids = [int(c) for c in ranked.chunk_rowids]
    item_rows = await items.items_by_rowid(item_ids)
    chunk_rows = await items.chunks_by_rowid(chunk_ids)
    rows: list[PgRow] = []
    for n, (item, chunk) in enumerate(zip(item_ids, chunk_ids, strict=True)):
        if item not in item_rows or chunk not in chunk_rows:
            continue  # replaced between the ranking and the read: the next search has it
        hit = (chunk, float(ranked.bm25[n]), int(ranked.matching_chunks[n]), int(ranked.total))
        hit_chunk = chunk_rows[chunk]
        rows.append(item_rows[item].joined(HIT_COLUMNS, hit).joined(hit_chunk.keys(), tuple(hit_chunk)))
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


def _note_unsupported(ctx: SearchContext) -> None:
    """Say what the PostgreSQL store does not do yet instead of doing it silently otherwise."""
    if ctx.request.per_item > 1:
        ctx.warnings.append("per_item: the PostgreSQL item store gives one passage per item so far")


PG_PIPELINE = SearchPipeline(
    expanders=(GlossaryExpander(),),
    retrievers=(PgDenseRetriever(), PgLexicalRetriever()),
    fuser=PgHybridFuser(),
    rerankers=(CrossRanker(),),
    diversifier=AllItems(),
)
"""The stages over the PostgreSQL store: the default pipeline's, with bm25 and the vectors from
PostgreSQL."""
