"""The fused score's arithmetic: 0..1, monotonic in each signal, and RRF's scale."""

from __future__ import annotations

import pytest

from knowledge_mcp.sources.search.dense.fusion import dense_score, hybrid_score, rrf


@pytest.mark.parametrize(
    ("ranks", "expected"),
    [
        ([1, 1], 1.0),
        ([None, None], 0.0),
        ([1, None], 0.5),
        ([None, 1], 0.5),
        ([1], 1.0),
    ],
)
def test_rrf_is_one_for_first_everywhere_and_zero_for_found_nowhere(
    ranks: list[int | None], expected: float
) -> None:
    assert rrf(ranks) == pytest.approx(expected)


def test_rrf_falls_with_the_rank() -> None:
    assert rrf([1, 2]) > rrf([2, 2]) > rrf([2, 50]) > rrf([None, 50])


@pytest.mark.parametrize("cosine", [-1.0, -0.2, 0.0, 0.3, 0.6, 1.0])
@pytest.mark.parametrize("lexical", [0.0, 0.0009, 0.2, 0.9, 1.0])
def test_every_fused_score_is_in_0_to_1(lexical: float, cosine: float) -> None:
    assert 0.0 <= hybrid_score(lexical, cosine) <= 1.0
    assert 0.0 <= dense_score(cosine) <= 1.0


def test_a_closer_text_scores_higher_alone_and_fused() -> None:
    cosines = (0.1, 0.3, 0.5, 0.7, 0.9)
    for scores in ([dense_score(c) for c in cosines], [hybrid_score(0.01, c) for c in cosines]):
        assert scores == sorted(scores) and len(set(scores)) == len(scores)


def test_a_better_bm25_match_scores_higher_at_the_same_cosine() -> None:
    scores = [hybrid_score(p, 0.4) for p in (0.001, 0.01, 0.1, 0.5, 0.9)]
    assert scores == sorted(scores) and len(set(scores)) == len(scores)


@pytest.mark.parametrize(
    ("lexical", "cosine", "low", "high"),
    [
        (0.0009, 0.2, 0.0, 0.01),  # no word matched, far in meaning: hopeless
        (0.9, 0.7, 0.8, 1.0),  # a strong match in words and in meaning
        (0.0009, 0.75, 0.005, 0.1),  # no word matched, very close in meaning: worth a look
    ],
)
def test_a_fused_score_reads_as_how_likely_the_hit_is_relevant(
    lexical: float, cosine: float, low: float, high: float
) -> None:
    assert low <= hybrid_score(lexical, cosine) <= high
