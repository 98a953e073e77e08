"""knowledge_search's per_item: lists with passages sorted for the merge, at most N per item."""

from __future__ import annotations

import pytest

from knowledge_mcp.aggregator.merging.diversity import capped, sorted_lists
from knowledge_mcp.sources.models import NoteResult


def hit(uri: str, score: float, passage: bool = False) -> NoteResult:
    result = NoteResult(
        id=uri,
        source="notes",
        uri=f"notes://{uri}",
        title=uri,
        snippet="",
        score=score,
        rank=1,
        created_at="2025-01-01T00:00:00Z",
        last_modified="2025-01-01T00:00:00Z",
    )
    result._passage = passage
    return result


CAPPED = [
    # (what it shows, uris best first, per_item, uris kept)
    ("one per item", ["a", "a", "b", "a"], 1, ["a", "b"]),
    ("two per item", ["a", "a", "b", "a", "b"], 2, ["a", "a", "b", "b"]),
    ("the top hit always stays", ["a", "a", "a"], 1, ["a"]),
    ("under the cap: unchanged", ["a", "b", "c"], 3, ["a", "b", "c"]),
]


@pytest.mark.parametrize(("shows", "uris", "per_item", "kept"), CAPPED, ids=[c[0] for c in CAPPED])
def test_no_item_takes_more_than_per_item_places(
    shows: str, uris: list[str], per_item: int, kept: list[str]
) -> None:
    results = [hit(u, 1.0 - n / 10) for n, u in enumerate(uris)]
    assert [r.id for r in capped(results, per_item)] == kept


def test_a_list_with_passages_is_sorted_by_score_for_the_merge() -> None:
    listed = [hit("a", 0.9), hit("a", 0.2, passage=True), hit("b", 0.5)]
    (ordered,) = sorted_lists([listed], "relevance")
    assert [(r.id, r.score) for r in ordered] == [("a", 0.9), ("b", 0.5), ("a", 0.2)]


def test_a_list_without_passages_is_left_as_the_source_ordered_it() -> None:
    listed = [hit("a", 0.5), hit("b", 0.5), hit("c", 0.1)]
    assert sorted_lists([listed], "relevance")[0] is listed
