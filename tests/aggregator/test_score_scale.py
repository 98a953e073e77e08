"""One score scale across sources: on the fixtures (five sources of very different sizes), an
item matching every query word ranks above every item matching one of them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.sources.search.lexical.term_stats import IndexStats, SharedStats
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.search.scoring import unique_idf
from tests.aggregator.conftest import structured

pytestmark = pytest.mark.anyio

QUERIES = [
    "Ambrose library volumes",  # a character card (4 cards) against the notes (dozens)
    "sourdough starter hydration",
    "postgres migration rollback",
    "solar panel inverter",
    "code review security",  # a prompt (5 prompts)
    "pasta history Italy",
    "duplicate photos hash",  # a chat
    "Mirelle ship captain",
    "invoice hosting",
    "dal lentils cumin",
    "SQL explainer query",
    "socratic tutor questions",
]


@pytest.mark.parametrize("query", QUERIES)
async def test_an_item_matching_every_word_ranks_above_one_matching_a_single_word(
    connect: Callable[..., Client], query: str
) -> None:
    async with connect() as client:
        out = structured(
            await client.call_tool("knowledge_search", {"query": query, "seen": "show", "limit": 50})
        )
    words = len(query.split())
    ranked = list(enumerate(out["results"], start=1))  # a hit's rank is its place in the list
    every = [rank for rank, r in ranked if len(r.get("matched_terms", [])) == words]
    single = [rank for rank, r in ranked if len(r.get("matched_terms", [])) == 1]
    assert every and single, "the query must find both kinds"
    assert max(every) < min(single)
    assert 1 in every


def stats(chunks: int, **df: int) -> IndexStats:
    return IndexStats(chunks, chunks, {f'"{term}"': rows for term, rows in df.items()})


@pytest.mark.parametrize(
    ("local", "others", "query", "expected"),
    [
        # A source that is the whole collection keeps its scale.
        (stats(1000, apple=3), [], "apple", 1.0),
        # A word rare everywhere: the small source's idf (log of a small count) is scaled up.
        (
            stats(40, apple=1),
            [stats(10_000, apple=0)],
            "apple",
            pytest.approx(math.log(10_039.5 / 1.5) / math.log(39.5 / 1.5)),
        ),
        # A word in most of a small source's rows (idf ~0 there) but rare overall: scaled far up.
        (
            stats(10, apple=8),
            [stats(10_000, apple=2)],
            "apple",
            pytest.approx(math.log(10_000.5 / 10.5) / 1e-6),
        ),
        # A word the source lacks does not count.
        (
            stats(40, apple=1, pear=0),
            [stats(10_000, apple=0, pear=50)],
            "apple pear",
            pytest.approx(math.log(10_039.5 / 1.5) / math.log(39.5 / 1.5)),
        ),
    ],
)
def test_a_source_s_bm25_is_scaled_to_the_idf_of_all_sources(
    local: IndexStats, others: list[IndexStats], query: str, expected: Any
) -> None:
    shared = SharedStats.of([local, *others])
    assert shared.scale(local, parse_query(query).terms) == expected


@pytest.mark.parametrize(
    ("stats", "query", "mass"),
    [
        # a word common in the small source (idf ~0 there) but rare overall weighs as it does overall
        ([stats(10, apple=8), stats(10_000, apple=2)], "apple", math.log(10_000.5 / 10.5)),
        # a word no source holds counts as the rarest
        (
            [stats(10, apple=1), stats(10_000, apple=0)],
            "apple pear",
            math.log(10_009.5 / 1.5) + math.log(10_010.5 / 0.5),
        ),
    ],
)
def test_the_shared_norm_weighs_the_query_words_over_all_sources(
    stats: list[IndexStats], query: str, mass: float
) -> None:
    shared = SharedStats.of(stats)
    within = shared.norm(parse_query(query).terms)
    assert within.mass == pytest.approx(mass)
    assert within.unique == pytest.approx(unique_idf(10_010))


@pytest.mark.parametrize("query", QUERIES)
async def test_a_top_hit_matching_every_query_word_reads_as_a_strong_score(
    connect: Callable[..., Client], query: str
) -> None:
    async with connect() as client:
        out = structured(await client.call_tool("knowledge_search", {"query": query, "seen": "show"}))
    top = out["results"][0]
    assert len(top["matched_terms"]) == len(query.split())
    # measured 0.14-0.99 (0.265 for the card "Ambrose Whitlock", 0.299 for "Captain Mirelle"); the
    # former calibration gave the small sources' best hits 0.003-0.05 (the fixtures are small)
    assert top["score"] >= 0.1, (top["title"], top["score"])
    weak = [r["score"] for r in out["results"] if len(r.get("matched_terms", [])) == 1]
    assert all(s < 0.1 for s in weak), "a one-word match stays weak"
