"""The merge, pure: pages of a long session whose seen set outgrows what sources hand over."""

from __future__ import annotations

from knowledge_mcp.aggregator.merging.merge import MAX_SEEN_EXTRA, Candidates, cut_page, fetch_size
from knowledge_mcp.sources.models import ResultItem


def hit(n: int) -> ResultItem:
    return ResultItem(
        id=f"n{n}",
        source="notes",
        uri=f"notes://n{n}",
        title=f"Note {n}",
        snippet="",
        score=1.0 - n / 10_000,
        rank=1,
        created_at="2026-01-01T00:00:00Z",
        last_modified="2026-01-01T00:00:00Z",
    )


def test_a_long_session_fetches_at_most_the_cap_of_extra_hits() -> None:
    seen = [f"notes://n{n}" for n in range(5_000)]
    assert fetch_size(0, 20, "hide", seen) == 21 + MAX_SEEN_EXTRA
    assert fetch_size(0, 20, "show", seen) == 21
    assert fetch_size(40, 20, "hide", seen[:3]) == 64


def test_when_everything_fetched_was_seen_the_page_goes_on_after_it() -> None:
    size = fetch_size(0, 20, "hide", [f"notes://n{n}" for n in range(1_000)])
    fetched = [hit(n) for n in range(size)]
    seen = {f"notes://n{n}" for n in range(1_000)}
    page = cut_page(
        Candidates([fetched], truncated=True, total=5_000),
        offset=0,
        limit=20,
        order_by="relevance",
        min_score=None,
        seen=seen,
        seen_mode="hide",
        fetched=size,
    )
    assert page.results == []  # seen items are not shown again while unseen ones may follow
    assert page.has_more and page.next_offset == size
    assert any("next_offset" in w for w in page.warnings)


def test_unseen_hits_within_the_fetch_still_fill_the_page() -> None:
    size = fetch_size(0, 5, "hide", [f"notes://n{n}" for n in range(300)])
    fetched = [hit(n) for n in range(size)]
    seen = {f"notes://n{n}" for n in range(300) if n % 2 == 0}
    page = cut_page(
        Candidates([fetched], truncated=True, total=5_000),
        offset=0,
        limit=5,
        order_by="relevance",
        min_score=None,
        seen=seen,
        seen_mode="hide",
        fetched=size,
    )
    assert [r.id for r in page.results] == ["n1", "n3", "n5", "n7", "n9"]
    assert page.has_more and page.next_offset == 11  # n10 was seen: the next page starts at n11
