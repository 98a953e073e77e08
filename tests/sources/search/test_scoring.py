"""Score calibration: bm25 to 0..1, and the seed's min-max baseline."""

from __future__ import annotations

import math

import pytest

from knowledge_mcp.sources.search.scoring import INTERCEPT, SLOPE, calibrated, min_max

BM25_VALUES = [0.0, -1e-9, -0.001, -0.5, -1.0, -2.5, -6.0, -10.0, -25.0, -100.0, -1e4, -1e9]


@pytest.mark.parametrize("terms", [0, 1, 2, 3, 10, 64])
@pytest.mark.parametrize("bm25", [*BM25_VALUES, 0.5, 3.0, 1e9])
def test_calibrated_is_within_zero_and_one(bm25: float, terms: int) -> None:
    assert 0.0 <= calibrated(bm25, terms) <= 1.0


@pytest.mark.parametrize("bm25", [0.0, 0.5, 3.0, 1e9])
def test_a_non_negative_bm25_means_no_evidence(bm25: float) -> None:
    assert calibrated(bm25, 1) == calibrated(0.0, 1) < 0.001


@pytest.mark.parametrize("terms", [1, 2, 5, 20])
def test_calibrated_grows_with_minus_bm25(terms: int) -> None:
    scores = [calibrated(b, terms) for b in BM25_VALUES[2:9]]
    assert scores == sorted(scores)
    assert len(set(scores)) == len(scores), "strictly increasing over ordinary bm25 values"
    all_scores = [calibrated(b, terms) for b in BM25_VALUES]
    assert all_scores == sorted(all_scores)


@pytest.mark.parametrize("bm25", [-0.5, -3.0, -12.0, -40.0])
def test_the_same_bm25_scores_lower_with_more_query_terms(bm25: float) -> None:
    scores = [calibrated(bm25, n) for n in (1, 2, 3, 5, 10, 64)]
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores)) == len(scores)


def test_zero_terms_count_as_one() -> None:
    assert calibrated(-6.0, 0) == calibrated(-6.0, 1)


MIDPOINT = -INTERCEPT / SLOPE  # the evidence that scores 0.5


@pytest.mark.parametrize(
    ("bm25", "terms", "expected"),
    [(-MIDPOINT, 1, 0.5), (-2 * MIDPOINT, 4, 0.5), (-MIDPOINT - math.log(3) / SLOPE, 1, 0.75)],
)
def test_calibrated_is_logistic_in_evidence_per_root_term(bm25: float, terms: int, expected: float) -> None:
    assert calibrated(bm25, terms) == pytest.approx(expected, abs=1e-6)


def test_calibrated_is_rounded_to_six_places() -> None:
    score = calibrated(-12.345678, 3)
    assert score == round(score, 6)
    evidence = 12.345678 / math.sqrt(3)
    assert score == pytest.approx(1 / (1 + math.exp(-(SLOPE * evidence + INTERCEPT))), abs=1e-6)


def test_a_strong_match_scores_high_and_a_weak_one_low() -> None:
    assert calibrated(-30.0, 2) > 0.9
    assert calibrated(-3.0, 2) < 0.01


def test_min_max_gives_the_best_one_and_the_worst_zero() -> None:
    scores = min_max([-10.0, -5.0, -1.0])
    assert scores[0] == pytest.approx(1.0)
    assert scores[1] == pytest.approx(4 / 9)
    assert scores[2] == 0.0


def test_min_max_always_gives_the_top_hit_one_however_weak() -> None:
    weak = min_max([-0.02, -0.01])
    assert weak[0] == pytest.approx(1.0)
    assert calibrated(-0.02, 1) < 0.01


@pytest.mark.parametrize(("values", "expected"), [([], []), ([-3.0], [0.0]), ([-2.0, -2.0], [0.0, 0.0])])
def test_min_max_edge_cases(values: list[float], expected: list[float]) -> None:
    assert min_max(values) == expected


def test_min_max_keeps_bm25_order() -> None:
    values = [-1.0, -7.5, -3.0, -7.0, -0.1]
    scores = min_max(values)
    assert sorted(range(5), key=lambda i: values[i]) == sorted(range(5), key=lambda i: -scores[i])
    assert all(0.0 <= s <= 1.0 for s in scores)
