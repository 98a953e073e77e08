"""The diversify stage: up to `per_item` passages of one item, each its own result.

Retrieval finds items, each with its best chunk (DESIGN §4: one result per item). With
`per_item = N > 1`, each item on the page also brings its next best N - 1 chunks that match the
query (by bm25, in the columns and under the chunk filters the search used), right after it:
two sections of one long document, two messages of one conversation, each with its own `loc`.
Paging still counts items (`results.page`), so pages never overlap or skip. With the default,
one, the page passes unchanged.

The passages are read on the event loop's thread from the source's read-only connection
(`memory_index.read_here`), scoped to the page's items; a database without a file (in memory)
gets none.
"""

from __future__ import annotations

from typing import Any

from .lexical.memory import memory_indexes
from .lexical.sql import ITEM_COLUMNS, column_match, ident
from .request import MAX_PER_ITEM, Found, SearchContext


def passages_sql(
    table: str, weights: tuple[float, float], items: int, leads: int, chunk_filters: list[str]
) -> str:
    """The next best chunks of `items` item rowids matching the query, past their `leads` chunks,
    at most a bound number per item; each row shaped as a page row (`lexical.sql._page_sql`:
    item columns, the hit's chunk_rowid, b, n, total, then the chunk's). Pure."""
    p = ident(table)
    marks = ", ".join("?" * items)
    lead_marks = ", ".join("?" * leads)
    where = " AND ".join([f"c.item_rowid IN ({marks})", f"c.id NOT IN ({lead_marks})", *chunk_filters])
    score = f"bm25({p}_chunks_fts, {float(weights[0])}, {float(weights[1])})"
    return f"""
WITH m AS MATERIALIZED (
    SELECT c.id AS chunk_rowid, c.item_rowid AS item_rowid, {score} AS b
    FROM {p}_chunks_fts JOIN {p}_chunks AS c ON c.id = {p}_chunks_fts.rowid
    WHERE {p}_chunks_fts MATCH ? AND {where}
), ranked AS (
    SELECT m.*, ROW_NUMBER() OVER (PARTITION BY item_rowid ORDER BY b, chunk_rowid) AS k FROM m
)
SELECT {ITEM_COLUMNS}, ranked.chunk_rowid AS chunk_rowid, ranked.b AS b, NULL AS n, NULL AS total, c.*
FROM ranked JOIN {p}_items AS i ON i.id = ranked.item_rowid JOIN {p}_chunks AS c ON c.id = ranked.chunk_rowid
WHERE ranked.k <= ?
ORDER BY ranked.item_rowid, ranked.k"""


def interleaved(rows: list[Any], extra: list[Any]) -> list[Any]:
    """`rows` (one per item) with each item's `extra` rows right after it, in their order. Pure."""
    by_item: dict[Any, list[Any]] = {}
    for row in extra:
        by_item.setdefault(row["id"], []).append(row)
    out: list[Any] = []
    for row in rows:
        out.append(row)
        out += by_item.pop(row["id"], [])
    return out


class Passages:
    """diversify: each page item with up to `per_item - 1` more of its matching chunks."""

    def diversify(self, ctx: SearchContext, found: Found) -> Found:
        per_item = max(1, min(MAX_PER_ITEM, ctx.request.per_item))
        rows = found.rows[: ctx.request.limit]
        if per_item == 1 or not rows or ctx.query is None:
            return found
        indexes = memory_indexes(ctx.db, ctx.source)
        if not indexes.can_read_here():
            return found
        request = ctx.request
        chunk = [f for f in request.filters if f.on_chunk]
        sql = passages_sql(ctx.source.name, ctx.source.weights, len(rows), len(rows), [f.sql for f in chunk])
        match = column_match(ctx.query.match_expression(), request.columns)
        params = [
            match,
            *(row["id"] for row in rows),
            *(row["chunk_rowid"] for row in rows),
            *(value for f in chunk for value in f.params),
            per_item - 1,
        ]
        extra = indexes.read_here(sql, params)
        if not extra:
            return found
        page = interleaved(rows, extra) + found.rows[len(rows) :]
        return Found(page, found.total, found.terms_of, found.scores)
