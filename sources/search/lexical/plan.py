"""Which query terms find candidates and which only score them. Pure: no I/O.

FTS5 computes bm25 for every row an OR query matches, so a query with a common word costs
time in proportion to how common it is. bm25 gives common words little weight, and a row
that matches none of the query's rarer terms rarely ranks, so:

- terms matching more than half the rows are dropped (FTS5 clamps their idf to ~0: they
  change no score) unless nothing else is left;
- when the terms together match few rows, every matching row is scored (exact);
- otherwise only rows matching the rarest terms (together at most `CANDIDATE_CAP` rows) are
  candidates, and each candidate gets its full bm25 over all terms. When even the rarest
  term matches more rows than that, the most recently indexed `SAMPLE_CAP` of its rows
  are the candidates, and the response says so. When that term is the whole query, the
  sample is not ranked by bm25 at all (its idf, counted over every row of the term, costs more
  than the rest of the search): each sampled row scores the term's idf, as a one-word bm25
  hit of average length would, and the newest items come first. Such a sample needs only
  enough items for the page: it is read newest first and stops at `FLAT_PER_RESULT` items per
  result, which for a phrase of common words is what decides how far FTS5 reads. A sample that
  runs out of rows before that holds every match: it is the whole answer (counted exactly,
  newest first), not rerun with bm25.

A phrase's row count is estimated by its rarest word's: counting a phrase's rows exactly
costs as much as searching it.

On SciFact train (docs/performance.md) pruning leaves nDCG@10 unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..query import Term

EXACT_CAP = 500
"""Score every matching row when the terms' row counts add up to at most this."""
CANDIDATE_CAP = 300
"""Otherwise, candidates come from the rarest terms whose row counts add up to at most this."""
PER_RESULT = 10
"""Deeper pages need more candidates: both caps above are at least this many rows per result
asked for (offset + limit), so a page of 100 still finds what a page of 10 would rank."""
SCORE_CAP = 20_000
"""When pruning, a term matching more rows than this only scores if nothing rarer is asked:
walking its rows to score the candidates would cost more than the rest of the search."""
SAMPLE_CAP = 300
"""When even the rarest term matches more than `CANDIDATE_CAP` rows, score this many of them."""
FLAT_PER_RESULT = 3
"""An unranked sample (`flat_score`) stops at this many items per result asked for."""
REFILL_CAP = 20_000
"""When the candidates fill less than a page, score every match if they are at most this many."""


@dataclass(frozen=True)
class SearchPlan:
    match: str
    """The expression bm25 scores."""
    candidates: str | None = None
    """The expression that picks the rows to score, when it differs from `match`."""
    cap: int | None = None
    """Score only the most recently indexed `cap` candidate rows."""
    estimated_rows: int = 0
    """A lower bound on the rows the whole query matches, for `total_estimated`."""
    exact: bool = True
    """Every row the query matches was scored over every term that changes a score."""
    refill: str | None = None
    """The exact expression, when it is cheap enough to rerun for a page the candidates
    could not fill."""
    flat_score: float | None = None
    """For a sample of one very common term: the bm25 every sampled row gets (see below)."""
    sample_items: int | None = None
    """With `flat_score`: stop reading the sample once it has this many items."""
    dropped: tuple[str, ...] = ()
    """Terms matching most rows, left out (their idf is ~0, they change no score)."""
    unscored: tuple[str, ...] = ()
    """Common terms that did not score because rarer ones were asked (`SCORE_CAP`)."""
    scored: tuple[Term, ...] = ()
    """The terms of `match`, rarest first: what a store that ranks without FTS5 scores."""
    candidate_terms: tuple[Term, ...] | None = None
    """The terms of `candidates`, when it differs from `match`."""
    refill_terms: tuple[Term, ...] | None = None
    """The terms of `refill`."""

    def every_match(self) -> SearchPlan:
        """The plan that scores every match (`refill`, else `match`) over every term that may score:
        for a page the candidates could not fill, or newest first over all matches."""
        return SearchPlan(
            self.refill or self.match,
            estimated_rows=self.estimated_rows,
            scored=self.refill_terms or self.scored,
        )

    def note(self, read: int) -> str | None:
        """What the response says when only the newest `read` rows were searched (`cap`)."""
        if self.cap is None:
            return None
        how = "newest first" if self.flat_score is not None else "ranked"
        return (
            f"the rarest query word matches about {self.estimated_rows} chunks: searched the "
            f"{read} most recently indexed ({how}); add a rarer word to search them all"
        )

    def total(self, counted: int, items: int) -> int:
        """The matching items to report: what the page counted, at least what the rarest word's
        rows suggest when not every match was scored."""
        return counted if self.exact else max(counted, min(self.estimated_rows, items))


def plan_search(
    terms: tuple[Term, ...],
    df: dict[str, int],
    chunks: int,
    depth: int = 10,
    same_rows: Mapping[str, str] | None = None,
) -> SearchPlan | None:
    """The plan for `terms` given each term's row count (keyed by `Term.fts()`) and how many
    results the page reaches (`offset + limit`); None: no term matches anything.

    `same_rows` has, for some terms (by `Term.fts()`), an expression matching exactly the same
    rows that FTS5 reads faster (a prefix's terms, `vocabulary`); it stands in for the term
    wherever only rows count: the candidates and an unranked sample, never what bm25 scores."""
    exact_cap = max(EXACT_CAP, PER_RESULT * depth)
    candidate_cap = max(CANDIDATE_CAP, PER_RESULT * depth)
    present = [t for t in terms if df.get(t.fts(), 0) > 0]
    if not present:
        return None
    ubiquitous = [t for t in present if df[t.fts()] * 2 > chunks]
    kept = [t for t in present if t not in ubiquitous] or present
    dropped = tuple(t.text for t in ubiquitous if t not in kept)
    by_rarity = sorted(kept, key=lambda t: df[t.fts()])
    total = sum(df[t.fts()] for t in kept)
    largest = max(df[t.fts()] for t in kept)
    if total <= exact_cap:
        return SearchPlan(_or(by_rarity), estimated_rows=largest, dropped=dropped, scored=tuple(by_rarity))
    essential: list[Term] = []
    rows = 0
    for term in by_rarity:
        if essential and rows + df[term.fts()] > candidate_cap:
            break
        essential.append(term)
        rows += df[term.fts()]
    scored = [t for t in by_rarity if t in essential or df[t.fts()] <= SCORE_CAP]
    sample = rows > candidate_cap
    flat = sample and len(scored) == 1
    return SearchPlan(
        match=_or(scored, same_rows if flat else None),
        candidates=_or(essential, same_rows) if len(scored) > len(essential) else None,
        cap=max(SAMPLE_CAP, PER_RESULT * depth) if sample else None,
        flat_score=-idf(rows, chunks) if flat else None,
        sample_items=FLAT_PER_RESULT * depth if flat else None,
        estimated_rows=largest,
        exact=False,
        refill=_or(by_rarity) if total <= REFILL_CAP else None,
        dropped=dropped,
        unscored=tuple(t.text for t in by_rarity if t not in scored),
        scored=tuple(scored),
        candidate_terms=tuple(essential) if len(scored) > len(essential) else None,
        refill_terms=tuple(by_rarity) if total <= REFILL_CAP else None,
    )


def idf(rows: int, chunks: int) -> float:
    """FTS5's idf of a term in `rows` of `chunks` rows (clamped just above zero, as FTS5 does;
    so is a count past the rows, as an estimate can be)."""
    ratio = (chunks - rows + 0.5) / (rows + 0.5)
    return math.log(ratio) if ratio > 1 else 1e-6


def _or(terms: list[Term], same_rows: Mapping[str, str] | None = None) -> str:
    rows = same_rows or {}
    return " OR ".join(rows.get(t.fts(), t.fts()) for t in terms)


def estimate_keys(term: Term) -> list[str]:
    """The FTS expressions whose row counts estimate `term`'s (a phrase: each of its words)."""
    if len(term.words) > 1 and not term.prefix:
        return [Term((w,)).fts() for w in term.words]
    return [term.fts()]


def estimated_df(terms: tuple[Term, ...], counts: dict[str, int]) -> dict[str, int]:
    """Each term's row count from `counts` of its `estimate_keys` (a phrase: at most its rarest
    word's)."""
    return {t.fts(): min(counts.get(k, 0) for k in estimate_keys(t)) for t in terms}


@dataclass
class Sample:
    """An unranked sample read as FTS5 hands it back, newest first (`flat_score`): batches of
    `want` rows, then four times more each, until the rows name `want` items or `cap` rows were
    read; each item with its first (newest) chunk and how many of its chunks were read. Pure: the
    caller reads each batch (`next_batch`) and hands its rows (`take`)."""

    want: int
    cap: int
    items: dict[int, list[int]] = field(default_factory=dict)
    """Each item's [item, newest chunk, chunks read], in the order met."""
    read: int = 0
    complete: bool = False
    """The rows ran out before the cap: they are every match."""
    _batch: int = 0

    def next_batch(self) -> int | None:
        """How many rows to read next; None once the sample is done."""
        if self.complete or len(self.items) >= self.want or self.read >= self.cap:
            return None
        return min(self._batch or self.want, self.cap - self.read)

    def take(self, rows: list[tuple[int, int]], asked: int) -> None:
        """The (chunk, item) rows of a batch of `asked`."""
        self.read += len(rows)
        for chunk, item in rows:
            entry = self.items.get(item)
            if entry is not None:
                entry[2] += 1
            elif len(self.items) < self.want:
                self.items[item] = [item, chunk, 1]
        self.complete = len(rows) < asked
        self._batch = 4 * (self._batch or self.want)
