"""Score calibration: bm25 to 0..1 (with and without the query's norm), and the seed's min-max baseline."""

from __future__ import annotations

import math

import pytest

from knowledge_mcp.sources.search.scoring import (
    BIAS,
    COVERAGE_CAP,
    COVERAGE_WEIGHT,
    EVIDENCE_WEIGHT,
    INTERCEPT,
    MIN_UNIQUE_IDF,
    REFERENCE_IDF,
    SLOPE,
    Norm,
    calibrated,
    coverage,
    idf_mass,
    norm,
    unique_idf,
)

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


# With the query's norm (its idf mass and the collection's rarest-word idf): evidence in units of
# the collection's largest idf, and coverage of the query.


def full_match(chunks: int, terms: int) -> tuple[float, Norm]:
    """bm25 of a hit matching each of `terms` words once (each found in one row of `chunks`)."""
    within = norm([1] * terms, chunks)
    return -within.mass, within


@pytest.mark.parametrize(
    ("rows", "chunks", "expected"),
    [
        ([1], 40, math.log(39.5 / 1.5)),
        ([1, 1], 40, 2 * math.log(39.5 / 1.5)),
        ([0], 40, math.log(40.5 / 0.5)),  # a word no row holds counts as rarest
        ([30], 40, 1e-6),  # a word in most rows: FTS5 clamps its idf
        ([], 40, 0.0),
    ],
)
def test_the_idf_mass_is_the_query_terms_summed_idf(rows: list[int], chunks: int, expected: float) -> None:
    assert idf_mass(rows, chunks) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [(5750, REFERENCE_IDF), (40, math.log(39.5 / 1.5)), (3, MIN_UNIQUE_IDF), (1, MIN_UNIQUE_IDF)],
)
def test_the_unit_of_evidence_is_the_idf_of_a_word_in_one_row(chunks: int, expected: float) -> None:
    assert unique_idf(chunks) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(
    ("bm25", "mass", "expected"),
    [(-6.0, 6.0, 1.0), (-3.0, 12.0, 0.25), (0.0, 5.0, 0.0), (-100.0, 5.0, COVERAGE_CAP), (-3.0, 0.0, 0.0)],
)
def test_coverage_is_bm25_over_the_idf_mass_capped(bm25: float, mass: float, expected: float) -> None:
    assert coverage(bm25, mass) == pytest.approx(expected)


@pytest.mark.parametrize("chunks", [12, 40, 300, 5750, 100_000])
@pytest.mark.parametrize("terms", [1, 2, 3, 5])
def test_a_hit_matching_every_query_word_reads_the_same_in_a_small_or_a_large_collection(
    chunks: int, terms: int
) -> None:
    bm25, within = full_match(chunks, terms)
    reference_bm25, reference = full_match(5750, terms)
    assert calibrated(bm25, terms, within) == pytest.approx(
        calibrated(reference_bm25, terms, reference), abs=1e-5
    )


@pytest.mark.parametrize("chunks", [12, 40, 100])
def test_a_full_match_of_three_rare_words_in_a_small_collection_reads_as_strong(chunks: int) -> None:
    bm25, within = full_match(chunks, 3)
    assert calibrated(bm25, 3, within) > 0.5
    assert calibrated(bm25, 3) < 0.1, "the fit without the norm reads it as weak (the former scores)"


@pytest.mark.parametrize("chunks", [12, 40, 300, 5750])
def test_a_hit_matching_one_word_of_three_scores_far_below_the_full_match(chunks: int) -> None:
    full, within = full_match(chunks, 3)
    one = full / 3
    assert calibrated(one, 3, within) < 0.05 < 0.5 < calibrated(full, 3, within)


@pytest.mark.parametrize("chunks", [12, 40, 5750])
def test_with_the_norm_the_score_still_grows_with_minus_bm25(chunks: int) -> None:
    _, within = full_match(chunks, 3)
    scores = [calibrated(b, 3, within) for b in BM25_VALUES]
    assert scores == sorted(scores)
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_the_shared_scale_multiplies_the_evidence_but_not_the_coverage() -> None:
    bm25, within = full_match(40, 3)
    assert calibrated(bm25, 3, within, scale=2.0) > calibrated(bm25, 3, within)
    assert coverage(bm25 * 2.0, within.mass * 2.0) == coverage(bm25, within.mass)


def test_a_score_of_one_half_is_where_the_fitted_logistic_crosses_zero() -> None:
    # a hit covering the query once (coverage 1) whose evidence, in SciFact's unit, is `mass`
    mass = -(COVERAGE_WEIGHT + BIAS) / EVIDENCE_WEIGHT
    assert calibrated(-mass, 1, Norm(mass=mass, unique=REFERENCE_IDF)) == pytest.approx(0.5, abs=1e-5)


@pytest.mark.parametrize(("rows", "chunks"), [([0], 0), ([1], 0), ([5], 2), ([], 0)])
def test_an_empty_or_tiny_collection_has_a_norm_not_an_error(rows: list[int], chunks: int) -> None:
    within = norm(rows, chunks)
    assert within.unique == MIN_UNIQUE_IDF and within.mass >= 0.0
    assert 0.0 <= calibrated(-1.0, 1, within) <= 1.0
