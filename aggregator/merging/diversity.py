"""knowledge_search's side of `per_item`: no item crowds the merged page. Pure: no I/O.

Each source hands over its items best first, each followed by up to `per_item - 1` further
passages (`sources/search/diversify.py`), whose scores are below their item's but may be below
the next items' too. The merge (`merge.ranked`) needs every list sorted by score, so a list with
passages is sorted again (stably: an item's passages stay in their order, and a list without
passages is unchanged). Then at most `per_item` results of one item (by uri) stay, in the merged
order, so the best of each item, and the top hit, always stay.
"""

from __future__ import annotations

from knowledge_mcp.sources.models import OrderBy

from .merge import Merged


def sorted_lists(lists: list[list[Merged]], order_by: OrderBy) -> list[list[Merged]]:
    """Each source's list in the order the merge expects, passages placed by their own score."""
    if order_by != "relevance":
        return lists  # an item's passages share its date: they already follow it
    return [
        sorted(one, key=lambda r: -r.score) if any(r.private["_passage"] for r in one) else one
        for one in lists
    ]


def capped(results: list[Merged], per_item: int) -> list[Merged]:
    """`results` (best first) with at most `per_item` of any one item; the first of each stays."""
    count: dict[str, int] = {}
    kept: list[Merged] = []
    for result in results:
        n = count.get(result.uri, 0)
        if n < per_item:
            kept.append(result)
        count[result.uri] = n + 1
    return kept
