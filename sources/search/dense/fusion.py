"""The fuse stage: one ranking from bm25's candidates and the embeddings' candidates.

Candidates are the union of both pools. Every candidate has a cosine (the dense index knows
every item), and a bm25 value when a query word matched it. Two ways to combine them are
kept, both measured on SciFact train (`knowledge-mcp eval --retrieval hybrid`):

- `mix` (the default): a weighted mix of the calibrated bm25 score (`scoring.calibrated`,
  0 without a match) and the calibrated cosine (`dense_score`). Both are absolute
  probabilities of relevance, so the fused score is one too: 0..1, comparable across queries
  and sources, and `min_score` and the cross-source merge keep their meaning.
- `rrf`: reciprocal rank fusion (k = 60), rescaled to 0..1 by its largest possible value.

The page is then read in the fused order, item filters and paging applied in SQL.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ...models import ScoreType
from ..lexical.sql import SearchSpec, build_ranked_sql
from ..query import ParsedQuery
from ..request import NOTHING, Found, SearchContext
from ..scoring import calibrated
from .retriever import DenseFound

Method = Literal["mix", "rrf"]
METHOD: Method = "mix"
LEXICAL_WEIGHT = 0.5
"""The weight of bm25 in the mix (the embeddings have the rest)."""
RRF_K = 60
# dense_score = 1 / (1 + exp(-(COSINE_SLOPE * cosine + COSINE_INTERCEPT)))
COSINE_SLOPE = 12.0
COSINE_INTERCEPT = -7.0


def dense_score(cosine: float) -> float:
    """A cosine as the probability that the item is relevant (fitted on SciFact train)."""
    return 1.0 / (1.0 + math.exp(-(COSINE_SLOPE * cosine + COSINE_INTERCEPT)))


def mix(lexical: float, dense: float, weight: float = LEXICAL_WEIGHT) -> float:
    return round(weight * lexical + (1.0 - weight) * dense, 6)


def rrf(ranks: Sequence[int | None], k: int = RRF_K) -> float:
    """Reciprocal rank fusion of 1-based ranks (None: not in that list), scaled to 0..1."""
    best = len(ranks) / (k + 1)
    return round(sum(1.0 / (k + r) for r in ranks if r is not None) / best, 6)


@dataclass
class Candidate:
    item: int
    chunk: int
    bm25: float | None = None
    lexical_rank: int | None = None
    matches: int = 1
    cosine: float = 0.0
    dense_rank: int | None = None


def candidates(lexical: Found | None, dense: DenseFound) -> dict[int, Candidate]:
    """The union of both pools, each with what both retrievers know of it."""
    index = dense.index
    assert index is not None
    found: dict[int, Candidate] = {}
    for rank, row in enumerate(lexical.rows if lexical is not None else [], start=1):
        found[row["id"]] = Candidate(row["id"], row["chunk_rowid"], row["b"], rank, row["n"])
    for rank, position in enumerate(dense.top, start=1):
        item = int(index.items[position])
        if item not in found:
            found[item] = Candidate(item, index.best_chunk(position, dense.cosines))
        found[item].dense_rank = rank
    for item, position in index.positions(list(found)).items():
        found[item].cosine = float(dense.best[position])
    return found


def fused_score(c: Candidate, terms: int, method: Method, lexical: bool) -> float:
    if method == "rrf":
        return rrf([c.lexical_rank, c.dense_rank] if lexical else [c.dense_rank])
    dense = dense_score(c.cosine)
    if not lexical:
        return round(dense, 6)
    return mix(calibrated(c.bm25, terms) if c.bm25 is not None else 0.0, dense)


class HybridFuser:
    """fuse: bm25 alone when the embeddings did not answer; else the fused ranking."""

    def __init__(self, method: Method = METHOD) -> None:
        self.method = method

    async def fuse(self, ctx: SearchContext, query: ParsedQuery, found: Sequence[Found]) -> Found:
        dense = next((f for f in found if isinstance(f, DenseFound)), None)
        lexical = next((f for f in found if not isinstance(f, DenseFound)), None)
        if dense is None:
            return lexical if lexical is not None else NOTHING
        pool = candidates(lexical, dense)
        kind: ScoreType = "hybrid" if ctx.lexical else "dense"
        terms = len(query.terms)
        scored = sorted(
            ((fused_score(c, terms, self.method, ctx.lexical), c) for c in pool.values()),
            key=lambda sc: (-sc[0], sc[1].item),
        )
        ranked = [(c.item, c.chunk, -score, c.matches) for score, c in scored]
        request = ctx.request
        spec = SearchSpec(
            ctx.source.name,
            match="",
            limit=request.limit,
            offset=request.offset,
            filters=tuple(request.filters),
        )
        rows = await ctx.db.fetchall(*build_ranked_sql(spec, ranked))
        total = max(len(ranked), lexical.total or 0) if lexical is not None else len(ranked)
        return Found(
            rows,
            total if ranked else None,
            _terms_of(lexical, pool),
            {c.item: (score, kind) for score, c in scored},
        )


def _terms_of(lexical: Found | None, pool: dict[int, Candidate]) -> Callable[[int], list[str]] | None:
    """The lexical ranking's matched terms, for the chunks it matched (none for the others)."""
    if lexical is None or lexical.terms_of is None:
        return None
    known, terms_of = {c.chunk for c in pool.values() if c.bm25 is not None}, lexical.terms_of
    return lambda chunk: terms_of(chunk) if chunk in known else []
