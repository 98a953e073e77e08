"""The diversify stage: up to `per_item` passages of one item, each its own result.

Retrieval finds items, each with its best chunk (DESIGN §4: one result per item). With
`per_item = N > 1`, each item on the page also brings its next best N - 1 chunks that match the
query (by bm25, in the columns and under the chunk filters the search used), right after it:
two sections of one long document, two messages of one conversation, each with its own `loc`.
Paging still counts items (`results.page`), so pages never overlap or skip. With the default,
one, the page passes unchanged.

The store reads the passages (`Store.passages`), scoped to the page's items.
"""

from __future__ import annotations

from typing import Any

from .request import MAX_PER_ITEM, Found, SearchContext


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

    async def diversify(self, ctx: SearchContext, found: Found) -> Found:
        per_item = max(1, min(MAX_PER_ITEM, ctx.request.per_item))
        rows = found.rows[: ctx.request.limit]
        if per_item == 1 or not rows or ctx.query is None:
            return found
        extra = await ctx.store.passages(ctx, ctx.query, rows, per_item - 1)
        if not extra:
            return found
        page = interleaved(rows, extra) + found.rows[len(rows) :]
        return Found(page, found.total, found.terms_of, found.scores, scale=found.scale)
