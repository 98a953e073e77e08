"""Map FTS5 bm25 values to 0..1 scores that mean roughly the same across queries and sources.

FTS5's bm25() is negative, more negative is better, and its magnitude grows with the number
of query terms matched and their rarity. The calibrated map takes the evidence per square root
of the query's term count (so long queries do not inflate scores) through a logistic curve
fitted on SciFact train (top-20 hits of all 809 queries, labelled by the qrels; log-loss 0.121
against 0.136 for raw bm25 and 0.126 for per-term evidence). A score therefore reads roughly as
"how likely is this hit relevant": monotonic within a response (the order is bm25's order),
and an absolute scale across responses and sources, unlike the seed's per-result-set min-max
(kept below as the baseline), which gives every top hit 1.0 however weak it is.
"""

from __future__ import annotations

import math

# score = 1 / (1 + exp(-(SLOPE * evidence + INTERCEPT))), evidence = -bm25 / sqrt(terms)
SLOPE = 0.5787
INTERCEPT = -7.0653


def calibrated(bm25: float, term_count: int) -> float:
    evidence = max(0.0, -bm25) / math.sqrt(max(1, term_count))
    return round(1.0 / (1.0 + math.exp(-(SLOPE * evidence + INTERCEPT))), 6)


def min_max(values: list[float]) -> list[float]:
    """The seed's per-result-set mapping, kept as the baseline the eval compares against."""
    if not values:
        return []
    best, worst = min(values), max(values)
    return [(worst - v) / (worst - best + 1e-9) for v in values]
