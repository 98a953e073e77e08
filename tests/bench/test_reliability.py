"""The reliability table: hits grouped by score, and the fraction of each group that is relevant."""

from __future__ import annotations

import pytest

from knowledge_mcp.bench.split.reliability import EDGES, bucket_of, expected_error, render, table


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        (0.0, 0),
        (0.009, 0),
        (0.01, 1),
        (0.049, 1),
        (0.5, 6),
        (0.64, 6),
        (0.95, 9),
        (1.0, 9),
        (-0.1, 0),
        (1.5, 9),
    ],
)
def test_a_score_falls_in_the_bucket_whose_lower_edge_it_reaches(score: float, expected: int) -> None:
    assert bucket_of(score) == expected


def test_each_bucket_counts_its_hits_and_the_relevant_ones() -> None:
    pairs = [(0.005, False), (0.006, False), (0.55, True), (0.6, False), (0.95, True), (0.99, True)]
    buckets = table(pairs)
    assert len(buckets) == len(EDGES) - 1
    assert (buckets[0].hits, buckets[0].relevant, buckets[0].fraction) == (2, 0, 0.0)
    assert (buckets[6].hits, buckets[6].fraction) == (2, 0.5)
    assert buckets[6].mean_score == pytest.approx(0.575)
    assert (buckets[9].hits, buckets[9].fraction) == (2, 1.0)
    assert buckets[3].fraction is None and buckets[3].row()["relevant"] is None


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        ([(0.95, True), (0.92, True), (0.005, False)], (2 * 0.065 + 0.005) / 3),
        ([(0.5, True), (0.5, False)], 0.0),  # half relevant at 0.5: perfectly calibrated
        ([(0.99, False), (0.95, False)], 0.97),  # sure and always wrong
        ([], 0.0),
    ],
)
def test_the_calibration_error_is_the_weighted_gap_between_score_and_fraction_relevant(
    pairs: list[tuple[float, bool]], expected: float
) -> None:
    assert expected_error(table(pairs)) == pytest.approx(expected)


def test_the_rendered_table_leaves_out_empty_buckets() -> None:
    lines = render(table([(0.3, True), (0.31, False)]))
    assert len(lines) == 2 and "0.20-0.35" in lines[1] and "0.5000" in lines[1]
