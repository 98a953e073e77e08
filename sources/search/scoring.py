"""Map FTS5 bm25 values to 0..1 scores that read as the chance that a hit is relevant.

**What a score means.** A lexical score is a logistic fit of relevance on SciFact train
(809 queries, their top-20 hits each, labelled by the qrels): 0.5 means about even odds that
the hit is relevant, 0.9 about nine in ten, 0.05 one in twenty (`eval --split-sources` prints
the reliability table: score bucket against the fraction of hits that were relevant). The
same holds for hybrid scores (`dense/fusion.py`, fitted the same way on the same queries).
SciFact's judgements are sparse (about one relevant abstract per query), so the fractions are
a floor: an unjudged hit may be relevant too.

The fit has two signals, both taken from bm25 so that the order within a response is bm25's:

- **evidence**: bm25 per square root of the query's term count (long queries do not inflate
  it), in units of the idf of a word found in a single row, scaled to SciFact's 5,750 chunks
  (`REFERENCE_IDF`). bm25's idf grows with the log of the collection's size, so without this a
  hit matching every query word in a collection of forty notes could never reach more than a
  few percent; with it, the same match reads as it
  would among SciFact's abstracts.
- **coverage**: bm25 over the query's idf mass (`idf_mass`: the bm25 of a hit matching each
  query word once, at average length, in the body), capped at `COVERAGE_CAP`: about the
  idf-weighted fraction of the query's distinct words the hit matches (times how often and
  where: a title match weighs more). A hit matching one word of four rarely covers a quarter.

On SciFact train the two together fit better than the evidence alone (the former calibration,
`SLOPE`/`INTERCEPT`, still used when no norm is known; the fit's figures: `docs/performance.md`,
"Lexical search"). Both are read on the statistics the hit's bm25 was
weighed by: its source's own, or in `knowledge_search` those of all the user's sources together
(the bm25 scaled by `SharedStats.scale`, the norm `SharedStats.norm`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from .lexical.plan import idf

# Without the query's statistics: sigmoid(SLOPE * evidence + INTERCEPT), evidence = -bm25 / sqrt(terms)
SLOPE = 0.5787
INTERCEPT = -7.0653
# With them: sigmoid(EVIDENCE_WEIGHT * evidence + COVERAGE_WEIGHT * coverage + BIAS)
EVIDENCE_WEIGHT = 0.4508
COVERAGE_WEIGHT = 1.5856
BIAS = -7.2651
COVERAGE_CAP = 2.0
REFERENCE_IDF = 8.2514
"""idf of a word in one row of SciFact's 5,750 chunks: the unit the evidence was fitted in."""
MIN_UNIQUE_IDF = 1.0
"""A collection of a handful of rows has no meaningful idf: its unit is at least this."""


@dataclass(frozen=True)
class Norm:
    """What a hit's bm25 is measured against, for one query in one collection."""

    mass: float
    """The query's idf mass (`idf_mass`)."""
    unique: float
    """The idf of a word found in a single row of the collection (`unique_idf`)."""


def idf_mass(rows: Iterable[int], chunks: int) -> float:
    """The bm25 a hit matching each of the query's distinct terms once, at average length, in
    the body would reach: the terms' summed idf (given each term's row count among `chunks`
    rows; a word no row holds counts as rarest)."""
    return sum(idf(r, chunks) for r in rows)


def unique_idf(chunks: int) -> float:
    return max(MIN_UNIQUE_IDF, idf(1, chunks))


def norm(rows: Iterable[int], chunks: int) -> Norm:
    """The norm of a query whose terms are in `rows` rows each, among `chunks` rows."""
    return Norm(idf_mass(rows, chunks), unique_idf(chunks))


def coverage(bm25: float, mass: float) -> float:
    """How much of the query a hit matches: its bm25 over the query's idf mass, capped."""
    return min(COVERAGE_CAP, max(0.0, -bm25) / mass) if mass > 0 else 0.0


def calibrated(bm25: float, term_count: int, within: Norm | None = None, scale: float = 1.0) -> float:
    """The 0..1 score of a hit of bm25 `bm25` (as its source computed it) for a query of
    `term_count` terms; `scale` puts bm25 on the idf of all the user's sources together
    (`SharedStats.scale`), and `within` is the query's norm on the same statistics: the hit's
    source's own, or all the sources' (`SharedStats.norm`) when scaled."""
    evidence = max(0.0, -bm25 * scale) / math.sqrt(max(1, term_count))
    if within is None:
        return round(_sigmoid(SLOPE * evidence + INTERCEPT), 6)
    evidence *= REFERENCE_IDF / within.unique
    x = EVIDENCE_WEIGHT * evidence + COVERAGE_WEIGHT * coverage(bm25 * scale, within.mass) + BIAS
    return round(_sigmoid(x), 6)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))
