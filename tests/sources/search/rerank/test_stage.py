"""The rerank stage over the real notes fixtures: it reorders the fused pool by a backend's
scores, keeps the fused scores' scale, pages without overlap, and on any failure keeps the
fused order and says why."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio
import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.search.rerank.backend import Reranking
from knowledge_mcp.sources.storage.db import Database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio

QUERY = "the"  # 32 of the fixture notes match


class Scripted:
    """A backend whose scores are a function of the passages' positions."""

    name = "scripted"

    def __init__(self, scores: Callable[[int], list[float]], pool: int = 50) -> None:
        self.scores = scores
        self.pool = pool
        self.asked: list[Sequence[str]] = []

    async def score(self, query: str, passages: Sequence[str]) -> list[float]:
        self.asked.append(passages)
        return self.scores(len(passages))


def reverse(n: int) -> list[float]:
    return [float(i) for i in range(n)]


class Failing:
    name = "failing"
    pool = 50

    def __init__(self, problem: Exception | None = None, sleep_s: float = 0.0) -> None:
        self.problem, self.sleep_s = problem, sleep_s

    async def score(self, query: str, passages: Sequence[str]) -> list[float]:
        await anyio.sleep(self.sleep_s)
        if self.problem is not None:
            raise self.problem
        return [1.0]  # one score for many passages


async def search(db: Database, rerank: Reranking | None = None, **kw: Any) -> Any:
    request = SearchRequest(QUERY, **{"limit": 5, "mode": "lexical", **kw})
    request.rerank = rerank
    return await notes.search(SqliteStore(db, "notes"), request, Defaults())


def uris(response: Any) -> list[str]:
    return [r.uri for r in response.results]


async def test_rerank_reorders_the_fused_pool_by_the_backends_scores(notes_db: Database) -> None:
    everything = await search(notes_db, limit=50)
    assert everything.count > 20
    reranked = await search(notes_db, Reranking(Scripted(reverse)))
    assert uris(reranked) == list(reversed(uris(everything)))[:5]
    assert [r.score_type for r in reranked.results] == ["rerank"] * 5
    assert [r.rank for r in reranked.results] == [1, 2, 3, 4, 5]
    assert reranked.degraded is None and reranked.provider_hint is None


async def test_reranked_items_take_the_fused_scores_of_the_places_they_move_into(notes_db: Database) -> None:
    fused = await search(notes_db)
    reranked = await search(notes_db, Reranking(Scripted(reverse)))
    assert [r.score for r in reranked.results] == [r.score for r in fused.results]
    assert reranked.top_score == fused.top_score


async def test_reranked_pages_neither_overlap_nor_skip(notes_db: Database) -> None:
    rerank = Reranking(Scripted(reverse))
    whole = await search(notes_db, rerank, limit=10)
    first = await search(notes_db, rerank, limit=5)
    second = await search(notes_db, rerank, limit=5, offset=5)
    assert uris(first) + uris(second) == uris(whole)
    assert first.has_more and first.next_offset == 5


async def test_a_page_past_the_pool_is_the_fused_order_and_continues_the_reranked_one(
    notes_db: Database,
) -> None:
    rerank = Reranking(Scripted(reverse, pool=6))
    fused = await search(notes_db, limit=12)
    reranked = await search(notes_db, rerank, limit=12)
    past = await search(notes_db, rerank, limit=6, offset=6)
    assert uris(reranked)[:6] == list(reversed(uris(fused)[:6]))
    assert uris(reranked)[6:] == uris(fused)[6:] == uris(past)


async def test_the_backend_reads_each_candidates_title_and_best_chunk(notes_db: Database) -> None:
    backend = Scripted(reverse, pool=3)
    fused = await search(notes_db)
    await search(notes_db, Reranking(backend))
    assert len(backend.asked) == 1 and len(backend.asked[0]) == 3
    for result, text in zip(fused.results[:3], backend.asked[0], strict=True):
        assert text.startswith(" ".join(result.title.split()) + ". ")
        assert len(text) > len(result.title) + 20
    assert all(len(p) <= 1200 for p in backend.asked[0])


@pytest.mark.parametrize(
    ("backend", "timeout_s", "hint"),
    [
        (Failing(RuntimeError("private note text")), 4.0, "failing failed (RuntimeError)"),
        (Failing(sleep_s=5.0), 0.05, "failing took over 0.05 s"),
        (Failing(), 4.0, "failing failed (1 scores for"),
    ],
    ids=["raises", "times out", "scores the wrong number of passages"],
)
async def test_a_failing_reranker_leaves_the_fused_order_and_says_why(
    notes_db: Database, backend: Failing, timeout_s: float, hint: str
) -> None:
    fused = await search(notes_db)
    answer = await search(notes_db, Reranking(backend, timeout_s=timeout_s))
    assert uris(answer) == uris(fused)
    assert [r.score for r in answer.results] == [r.score for r in fused.results]
    assert answer.degraded is True
    assert answer.provider_hint is not None and f"not reranked: {hint}" in answer.provider_hint
    assert "private note text" not in answer.provider_hint


async def test_without_a_reranker_the_fused_order_stands_and_the_hint_says_why(notes_db: Database) -> None:
    fused = await search(notes_db)
    answer = await search(notes_db, Reranking(None, "no rerank_model is configured"))
    assert uris(answer) == uris(fused)
    assert answer.degraded is True
    assert answer.provider_hint == "not reranked: no rerank_model is configured"


async def test_a_date_order_is_not_reranked(notes_db: Database) -> None:
    backend = Scripted(reverse)
    recent = await search(notes_db, order_by="recent")
    answer = await search(notes_db, Reranking(backend), order_by="recent")
    assert uris(answer) == uris(recent) and backend.asked == []
    assert answer.provider_hint == "not reranked: order_by recent is a date order"
