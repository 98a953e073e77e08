"""Does a score read as the chance that a hit is relevant? The reliability table: hits grouped
by score, and in each group the fraction that the judgements call relevant. Pure: no I/O.

A calibrated score (`sources/search/scoring.py`) puts about half the hits scoring near 0.5
among the relevant ones; a score that is only an order (the seed's min-max) does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

EDGES = (0.0, 0.01, 0.05, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 1.0)
"""Bucket bounds: a score s falls in [lower, upper), the last bucket includes 1.0."""


@dataclass(frozen=True)
class Bucket:
    lower: float
    upper: float
    hits: int
    relevant: int
    mean_score: float

    @property
    def fraction(self) -> float | None:
        """The fraction of the bucket's hits that are relevant; None for an empty bucket."""
        return self.relevant / self.hits if self.hits else None

    def row(self) -> dict[str, str | float | int | None]:
        fraction = self.fraction
        return {
            "bucket": f"{self.lower:.2f}-{self.upper:.2f}",
            "hits": self.hits,
            "mean_score": round(self.mean_score, 4),
            "relevant": round(fraction, 4) if fraction is not None else None,
        }


def bucket_of(score: float, edges: Sequence[float] = EDGES) -> int:
    """The index of the bucket `score` falls in (scores outside 0..1 go to the end buckets)."""
    for n in range(len(edges) - 2, -1, -1):
        if score >= edges[n]:
            return n
    return 0


def table(pairs: Iterable[tuple[float, bool]], edges: Sequence[float] = EDGES) -> list[Bucket]:
    """The reliability table of (score, relevant) pairs, one bucket per pair of edges."""
    hits = [0] * (len(edges) - 1)
    relevant = [0] * (len(edges) - 1)
    total = [0.0] * (len(edges) - 1)
    for score, is_relevant in pairs:
        n = bucket_of(score, edges)
        hits[n] += 1
        relevant[n] += int(is_relevant)
        total[n] += score
    return [
        Bucket(edges[n], edges[n + 1], hits[n], relevant[n], total[n] / hits[n] if hits[n] else 0.0)
        for n in range(len(edges) - 1)
    ]


def expected_error(buckets: Sequence[Bucket]) -> float:
    """The expected calibration error: the hit-weighted mean gap between a bucket's mean score
    and its fraction relevant (0 is perfect)."""
    hits = sum(b.hits for b in buckets)
    if not hits:
        return 0.0
    return sum(b.hits * abs(b.mean_score - (b.fraction or 0.0)) for b in buckets) / hits


def render(buckets: Sequence[Bucket]) -> list[str]:
    """The table as aligned text lines (empty buckets left out)."""
    lines = ["    score        hits   mean score   fraction relevant"]
    for b in buckets:
        if b.hits:
            lines.append(
                f"    {b.lower:.2f}-{b.upper:.2f}  {b.hits:7d}   {b.mean_score:10.4f}   {b.fraction:17.4f}"
            )
    return lines
