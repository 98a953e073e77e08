"""knowledge_search and the hybrid floor: a source that found nothing close says so only when no
source answered (otherwise one source's empty answer is no news)."""

from __future__ import annotations

from typing import Any

import pytest

from knowledge_mcp.aggregator.fanout import Answer
from knowledge_mcp.aggregator.search import KnowledgeQuery, merged_response
from knowledge_mcp.sources.models import NoteResult, ResultItem, SearchResponse
from knowledge_mcp.sources.search.dense.fusion import FLOOR_WARNING


def response(results: list[ResultItem], warnings: list[str]) -> SearchResponse[Any]:
    return SearchResponse[ResultItem](
        results=results,
        count=len(results),
        has_more=False,
        next_offset=None,
        total_estimated=len(results),
        warnings=warnings,
    )


def hit(uri: str, score: float) -> ResultItem:
    return NoteResult(
        id=uri.split("://")[1],
        source="notes",
        uri=uri,
        title="t",
        snippet="",
        score=score,
        rank=1,
        created_at="2026-01-01T00:00:00Z",
        last_modified="2026-01-01T00:00:00Z",
    )


@pytest.mark.parametrize(
    ("notes_results", "expected"),
    [([hit("notes://a", 0.8)], False), ([], True)],
)
def test_the_floor_warning_shows_only_when_no_source_answered(
    notes_results: list[ResultItem], expected: bool
) -> None:
    answers = [
        Answer("notes", response(notes_results, [])),
        Answer("characters", response([], [FLOOR_WARNING])),
        Answer("prompts", response([], [FLOOR_WARNING])),
    ]
    merged = merged_response(answers, KnowledgeQuery("q", seen="show"), "relevance", set(), 20)
    assert (FLOOR_WARNING in merged.warnings) is expected
    assert merged.warnings.count(FLOOR_WARNING) <= 1
