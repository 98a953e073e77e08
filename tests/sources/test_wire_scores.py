"""Scores a reader can use in the text rendering: a page of distinct scores never prints two of
them alike (tiny hybrid scores included), and the text says the structured content's numbers."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.models import NoteResult, SearchResponse
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.notes.rendering import render_write
from knowledge_mcp.sources.notes.writing.models import Duplicate, WriteResult
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from knowledge_mcp.sources.wire import SCORE_DIGITS, dump, render_search, rounded, score_digits
from tests.conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio
SCORE = re.compile(r"^(\d+)\. \[([^\]]*)\] ", re.MULTILINE)
BROAD_QUERIES = ("the", "notes", "project", "and", "recipe", "work")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scores")
    await import_into(root, "notes", FIXTURES / "notes")
    await import_into(root, "media", FIXTURES / "media")
    return root


def page_of(scores: list[float]) -> SearchResponse[NoteResult]:
    """A page of note hits with these scores, best first, as a search would give it."""
    hits = [
        NoteResult(
            id=f"n{i}",
            source="notes",
            uri=f"notes://n{i}",
            title=f"Note {i}",
            snippet="s",
            score=score,
            score_type="hybrid",
            rank=i + 1,
            created_at="2025-01-01",
            last_modified="2025-01-01",
        )
        for i, score in enumerate(sorted(scores, reverse=True))
    ]
    return SearchResponse(
        results=hits, count=len(hits), has_more=False, next_offset=None, total_estimated=len(hits)
    )


def said(text: str) -> list[str]:
    """The score strings of a rendered page, in rank order."""
    return [m.group(2) for m in SCORE.finditer(text)]


def assert_readable(response: SearchResponse[Any]) -> None:
    """Distinct scores read differently, and the text's numbers are the structured content's."""
    text_scores = said(render_search(response))
    assert len(text_scores) == len(response.results)
    distinct = {r.score for r in response.results}
    assert len(set(text_scores)) == len(distinct), text_scores
    structured = [hit["score"] for hit in dump(response)["results"]]
    assert [float(s) for s in text_scores] == structured


def tiny_pages() -> list[list[float]]:
    """Pages of distinct scores such as long hybrid lists have: spread over 1e-4..1e-2, packed
    close together (three digits alike), and one far above the rest."""
    rng = random.Random(30)
    spread = [10 ** rng.uniform(-4, -2) for _ in range(100)]
    packed = [0.0123 + i * 1e-7 for i in range(100)]
    ladder = [1e-4 * (1 + i / 1000) for i in range(50)]
    return [spread, packed, ladder, [0.91, *spread[:20]], [1e-4, 2e-4, 3e-4], [0.5]]


@pytest.mark.parametrize(
    "scores", tiny_pages(), ids=["spread", "packed", "ladder", "one-above", "three", "one"]
)
def test_a_page_of_distinct_tiny_scores_never_prints_two_alike(scores: list[float]) -> None:
    assert_readable(page_of(scores))


def test_a_page_of_equal_scores_prints_them_alike_and_with_three_digits() -> None:
    page = page_of([0.123456, 0.123456, 0.0004567])
    assert said(render_search(page)) == ["0.123", "0.123", "0.000457"]


def test_scores_get_the_fewest_significant_digits_that_tell_them_apart() -> None:
    assert score_digits([0.5, 0.25, 0.125]) == SCORE_DIGITS
    assert score_digits([0.01231, 0.01232]) == 4
    assert score_digits([math.nextafter(0.1, 1.0), 0.1]) == 17  # any two floats differ
    assert rounded(0.012345, 3) == 0.0123
    assert rounded(1.0) == 1.0


async def test_real_pages_of_a_source_print_distinct_scores_distinctly(data_dir: Path) -> None:
    db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
    try:
        for query in BROAD_QUERIES:
            request = SearchRequest(query, limit=100, mode="lexical")
            response = await notes.search(SqliteStore(db, "notes"), request, Defaults())
            assert response.results, query
            assert_readable(response)
    finally:
        await db.close()


async def test_the_text_of_a_search_tool_says_the_structured_scores(data_dir: Path) -> None:
    mcp, host = build_server(Settings(data_dir=data_dir))
    try:
        async with Client(mcp) as client:
            for tool in ("knowledge_search", "notes_search", "media_search"):
                for query in BROAD_QUERIES:
                    args = {"query": query, "limit": 100} | (
                        {"seen": "show"} if tool == "knowledge_search" else {}
                    )
                    result = await client.call_tool(tool, args)
                    assert not result.is_error, result.content
                    assert result.structured_content is not None
                    hits = result.structured_content["results"]
                    text = result.content[0].text  # type: ignore[union-attr]
                    assert [float(s) for s in said(text)] == [hit["score"] for hit in hits], (tool, query)
    finally:
        await host.close()


def test_a_new_notes_similar_line_says_the_structured_similarity() -> None:
    similar = Duplicate(uri="notes://a1", title="Twin", similarity=0.912)
    result = WriteResult(
        id="b2", uri="notes://b2", title="New", path="new.md", version=1, duplicates=[similar]
    )
    assert "(0.912)" in render_write(result)
    assert dump(result)["duplicates"][0]["similarity"] == 0.912


def test_score_digits_are_the_fewest_from_three_that_keep_a_page_s_distinct_scores_apart() -> None:
    rng = random.Random(11)
    for _ in range(3000):
        base = rng.random() * rng.choice([1, 1e-2, 1e-4])
        scores: list[Any] = [
            base + rng.random() * 10 ** -rng.randint(1, 16) for _ in range(rng.choice([1, 2, 100]))
        ]
        scores += scores[:3] + rng.choice([[], [None, 1]])
        distinct = {s for s in scores if isinstance(s, float)}
        apart = [
            d for d in range(SCORE_DIGITS, 17) if len({rounded(s, d) for s in distinct}) == len(distinct)
        ]
        assert score_digits(scores) == (apart[0] if apart else 17), scores


def test_a_remembered_rounding_is_the_formatted_number_every_time() -> None:
    rng = random.Random(17)
    scores = [rng.random() * 10 ** -rng.randint(0, 6) for _ in range(500)] + [0.0, -0.0, 1.0, 1e-05]
    for _ in range(2):  # the second pass is answered from what the first remembered
        for score in scores:
            for digits in (SCORE_DIGITS, 5, 17):
                expected = float(f"{score:.{digits}g}")
                shown = rounded(score, digits)
                assert shown == expected and math.copysign(1, shown) == math.copysign(1, expected)
                assert repr(shown) == repr(expected)
    assert repr(rounded(-0.0)) == "-0.0" and repr(rounded(0.0)) == "0.0"  # one cache key, two numbers
