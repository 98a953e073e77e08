"""Merge the sources' ranked lists into one and cut a page from it. Pure: no I/O.

Scores are calibrated per source (`sources.scoring`), so the merge sorts on them directly.
`offset` counts positions in the merged list *before* the session's seen items are hidden,
and `next_offset` is the position after the last result returned, so with `seen = hide` the
next page starts exactly where this one stopped: pages never overlap or skip, even though
each page adds its results to the session's seen set.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from knowledge_mcp.sources.models import OrderBy, ResultItem
from knowledge_mcp.sources.search.describe.deferred import DeferredResult
from knowledge_mcp.sources.search.describe.results import collapse

SeenMode = Literal["hide", "downrank", "show"]
Merged = ResultItem | DeferredResult
"""A source's hit as the merge reads it: knowledge_search's sources hand over deferred ones, built
once the page is cut (`describe.deferred`)."""
DOWNRANK = 0.5
MAX_SEEN_EXTRA = 200
"""Each source hands over at most this many extra hits to make up for seen ones: a long session
would otherwise make every search fetch thousands. Past it, a page can come back short, and
`next_offset` goes on after what was fetched."""


@dataclass
class Candidates:
    """Every source's fetched hits (one list each, in the source's order), and whether any
    source holds more than it handed over."""

    lists: list[list[Merged]]
    truncated: bool
    total: int


@dataclass
class Page:
    results: list[Merged]
    has_more: bool
    next_offset: int | None
    total_estimated: int
    best_score: float | None
    warnings: list[str] = field(default_factory=list)
    seen_applied: list[str] = field(default_factory=list)
    """The seen URIs the session hid from this page or down-ranked on or off it."""


def fetch_size(offset: int, limit: int, seen_mode: SeenMode, seen: Sequence[str]) -> int:
    """How many hits each source must hand over so the merged page (and has_more) is exact."""
    return offset + limit + 1 + (min(len(seen), MAX_SEEN_EXTRA) if seen_mode != "show" else 0)


def ranked(lists: list[list[Merged]], order_by: OrderBy) -> list[Merged]:
    """The sources' lists merged; relevance: score, then last_modified desc, then uri; recent:
    last_modified desc first.

    A k-way merge keeps each source's own order, so the first N merged hits depend only on
    each source's first N: a page is the same whatever number of hits was fetched.
    """
    recent = order_by == "recent"

    def compare(a: Merged, b: Merged) -> int:
        first = (a.last_modified, a.score) if recent else (a.score, a.last_modified)
        second = (b.last_modified, b.score) if recent else (b.score, b.last_modified)
        if first != second:
            return -1 if first > second else 1
        return -1 if a.uri < b.uri else (1 if a.uri > b.uri else 0)

    return list(heapq.merge(*lists, key=functools.cmp_to_key(compare)))


def downranked(results: list[Merged], seen: set[str], order_by: OrderBy) -> list[Merged]:
    """Seen hits at half their score, merged back into the unseen ones.

    A merge, not a sort: each part keeps the source's own order, so the first N hits depend only
    on the source's first N + len(seen), whatever was fetched, and pages stay exact.
    """
    unseen = [r for r in results if r.uri not in seen]
    halved = [r.model_copy(update={"score": round(r.score * DOWNRANK, 6)}) for r in results if r.uri in seen]
    return ranked([unseen, halved], order_by)


def cut_page(
    candidates: Candidates,
    *,
    offset: int,
    limit: int,
    order_by: OrderBy,
    min_score: float | None,
    seen: set[str],
    seen_mode: SeenMode,
    fetched: int,
) -> Page:
    """The page at `offset` of the merged list, with the session applied."""
    lists = candidates.lists
    affected: list[str] = []
    if seen_mode == "downrank" and seen:
        affected = _downranked_here(candidates.lists, seen, offset, limit, order_by)
        lists = [downranked(one, seen, order_by) for one in lists]
    merged = ranked(lists, order_by)
    if candidates.truncated:
        merged = merged[:fetched]  # beyond this, an unfetched hit of some source could rank higher
    merged = collapse(merged)  # the same content found in two sources takes one place
    best = max((r.score for r in merged), default=None)
    below = 0
    if min_score is not None:
        kept = [r for r in merged if r.score >= min_score]
        below, merged = len(merged) - len(kept), kept
    hidden = seen if seen_mode == "hide" else set()
    taken = _take(merged, offset, limit, hidden)
    warnings: list[str] = []
    # With more seen items than a source hands over, unseen hits may lie past what was fetched.
    capped = candidates.truncated and len(hidden) > MAX_SEEN_EXTRA
    if capped and len(taken.positions) < limit:
        taken = _Taken(taken.positions, taken.next_visible or taken.end, taken.end)
        if not taken.positions:
            warnings.append(
                "this session has seen many results: everything fetched here was seen; go on "
                "at next_offset (or use seen=show)"
            )
    elif not taken.positions and hidden and merged[offset:]:
        taken = _take(merged, offset, limit, set())
        warnings.append(
            "every remaining result was already returned in this session; showing them again "
            "(seen=show always includes them)"
        )
        hidden = set()
    next_offset = taken.next_visible
    if next_offset is None and candidates.truncated and order_by == "recent" and min_score is not None:
        next_offset = taken.end  # hits below min_score hid the rest of what was fetched; go on after it
    if hidden:
        affected = [r.uri for r in merged[offset : taken.end] if r.uri in hidden]
    page = []
    for position in taken.positions:
        merged[position].rank = position + 1
        page.append(merged[position])
    hidden_count = sum(1 for r in merged if r.uri in hidden)
    total = len(merged) - hidden_count
    if candidates.truncated:
        total = candidates.total - hidden_count - below
    return Page(
        results=page,
        has_more=next_offset is not None,
        next_offset=next_offset,
        total_estimated=max(total, len(page)),
        best_score=best,
        warnings=warnings,
        seen_applied=affected
        + [r.uri for r in page if seen_mode == "downrank" and r.uri in seen and r.uri not in affected],
    )


def _downranked_here(
    lists: list[list[Merged]], seen: set[str], offset: int, limit: int, order_by: OrderBy
) -> list[str]:
    """The seen URIs this page would show at their full score (down-ranking moves them)."""
    shown = ranked(lists, order_by)[offset : offset + limit]
    return [r.uri for r in shown if r.uri in seen]


@dataclass
class _Taken:
    positions: list[int]
    next_visible: int | None
    """Position of the first visible hit after the page; None when there is none."""
    end: int


def _take(merged: list[Merged], offset: int, limit: int, hidden: set[str]) -> _Taken:
    """Up to `limit` positions from `offset` on, skipping hidden hits; and where to go on."""
    positions: list[int] = []
    for index in range(offset, len(merged)):
        if merged[index].uri in hidden:
            continue
        if len(positions) == limit:
            return _Taken(positions, index, index)
        positions.append(index)
    return _Taken(positions, None, len(merged))
