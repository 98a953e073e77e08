"""Map FTS5 bm25 values to 0..1 scores that mean roughly the same across queries and sources.

FTS5's bm25() is negative, more negative is better, and its magnitude grows with the number
of query terms matched and their rarity. The calibrated map divides the evidence by the
square root of the query's term count (so long queries do not inflate scores) and squashes it
with x / (x + k): monotonic within a response (order is bm25 order), and an absolute scale
across responses, unlike per-result-set min-max, which always gives the top hit 1.0 however
weak it is. `k` was fitted on SciFact train (see docs and `eval`).
"""

from __future__ import annotations

import math

CALIBRATION_K = 6.0


def calibrated(bm25: float, term_count: int, k: float = CALIBRATION_K) -> float:
    evidence = max(0.0, -bm25) / math.sqrt(max(1, term_count))
    return round(evidence / (evidence + k), 6)


def min_max(values: list[float]) -> list[float]:
    """The seed's per-result-set mapping, kept as the baseline the eval compares against."""
    if not values:
        return []
    best, worst = min(values), max(values)
    return [(worst - v) / (worst - best + 1e-9) for v in values]
