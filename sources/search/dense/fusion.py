"""The fuse stage: one ranking from bm25's candidates and the embeddings' candidates.

Candidates are the union of both pools (each the best `retriever.POOL` items). Every candidate
has a cosine (the store gives bm25's candidates theirs: `VectorStore.cosines`) and a calibrated
bm25 score (`scoring.calibrated`; that of no match when no query word matched it).

`logistic` (the default) is a logistic regression of relevance on the two signals (the logit of
the calibrated bm25 score, and the cosine), fitted on SciFact train's candidates and qrels
(`knowledge-mcp eval --retrieval hybrid`; how it was chosen and what it measured against RRF
and a min-max mix: `docs/performance.md`, "Hybrid fusion"): the fused score is itself a
probability that the hit is relevant, 0..1 and on the same scale as the lexical score, so
`min_score` and the merge across sources keep their meaning. `rrf` is kept as the alternative
(rescaled to 0..1 by its largest possible value). The embeddings alone (`mode = semantic`)
score by `dense_score`, the same kind of fit on the cosine alone.

The page is then read in the fused order, item filters and paging applied (`HybridFuser.page`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ...models import ScoreType
from ..lexical.sql import RankedRow, SearchSpec
from ..query import ParsedQuery
from ..request import NOTHING, Found, SearchContext
from ..scoring import Norm, calibrated
from . import evidence
from .embedder import embedder
from .retriever import DenseFound

Method = Literal["logistic", "rrf"]
METHOD: Method = "logistic"
# hybrid_score = sigmoid(LEXICAL_WEIGHT * logit(calibrated bm25) + COSINE_WEIGHT * cosine + BIAS)
LEXICAL_WEIGHT = 0.7033
COSINE_WEIGHT = 8.6825
BIAS = -5.5577
# dense_score = sigmoid(DENSE_SLOPE * cosine + DENSE_INTERCEPT)
DENSE_SLOPE = 18.475
DENSE_INTERCEPT = -13.4819
RRF_K = 60
FLOOR_WARNING = (
    "nothing close: none of the query's words occur, and nothing is nearer to it in meaning "
    "than to queries of random letters"
)
"""A search where no query word occurs (or, with `mode = semantic`, any search) whose best cosine
is under the collection's bar (`evidence.bar`) finds nothing, and says so."""


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _logit(p: float) -> float:
    p = min(max(p, 1e-9), 1.0 - 1e-9)
    return math.log(p / (1.0 - p))


def hybrid_score(lexical: float, cosine: float) -> float:
    """The probability that a hit is relevant, from its calibrated bm25 score and its cosine."""
    return round(_sigmoid(LEXICAL_WEIGHT * _logit(lexical) + COSINE_WEIGHT * cosine + BIAS), 6)


def dense_score(cosine: float) -> float:
    """The probability that a hit is relevant, from its cosine alone."""
    return round(_sigmoid(DENSE_SLOPE * cosine + DENSE_INTERCEPT), 6)


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


def candidates(lexical: Found | None, dense: DenseFound, bm25_scale: float = 1.0) -> dict[int, Candidate]:
    """The union of both pools, each with what both retrievers know of it (bm25 on the scale
    the user's sources share: `Found.scale`; bm25's candidates' cosines already
    read: `VectorStore.cosines`)."""
    hits = dense.hits
    assert hits is not None
    found: dict[int, Candidate] = {}
    for rank, row in enumerate(lexical.rows if lexical is not None else [], start=1):
        found[row["id"]] = Candidate(row["id"], row["chunk_rowid"], row["b"] * bm25_scale, rank, row["n"])
    for rank, position in enumerate(dense.top, start=1):
        item = int(hits.items[position])
        if item not in found:
            found[item] = Candidate(item, int(hits.chunks[position]))
        found[item].dense_rank = rank
    for item, position in hits.positions(list(found)).items():
        found[item].cosine = float(hits.best[position])
    return found


def fused_score(
    c: Candidate, terms: int, method: Method, lexical: bool, within: Norm | None = None, scale: float = 1.0
) -> float:
    if method == "rrf":
        return rrf([c.lexical_rank, c.dense_rank] if lexical else [c.dense_rank])
    if not lexical:
        return dense_score(c.cosine)
    return hybrid_score(calibrated(c.bm25 if c.bm25 is not None else 0.0, terms, within, scale), c.cosine)


class HybridFuser:
    """fuse: bm25 alone when the embeddings did not answer; else the fused ranking."""

    def __init__(self, method: Method = METHOD) -> None:
        self.method = method

    async def fuse(self, ctx: SearchContext, query: ParsedQuery, found: Sequence[Found]) -> Found:
        dense = next((f for f in found if isinstance(f, DenseFound)), None)
        lexical = next((f for f in found if not isinstance(f, DenseFound)), None)
        if dense is None:
            return lexical if lexical is not None else NOTHING
        dense = await dense.complete()  # its query embedded meanwhile (retriever.py)
        if await _below_floor(lexical, dense):
            ctx.warnings.append(FLOOR_WARNING)
            return NOTHING
        if lexical is not None and dense.store is not None and dense.hits is not None:
            await dense.store.cosines(dense.hits, [int(row["id"]) for row in lexical.rows])
        # bm25 as the source computed it (scaled in `calibrated`), the user's own terms weighing
        # as unexpanded (`ParsedQuery.boost`), as the lexical scores do (`results.describe`)
        pool = candidates(lexical, dense, 1.0 / query.boost)
        kind: ScoreType = "hybrid" if ctx.lexical else "dense"
        terms = len(query.own_terms)
        within, scale = (lexical.norm, lexical.scale) if lexical is not None else (None, 1.0)
        scored = sorted(
            ((fused_score(c, terms, self.method, ctx.lexical, within, scale), c) for c in pool.values()),
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
        # Without item filters the page is the ranking's window: only it is read (a small read
        # runs on the loop's thread, as the lexical page does).
        window = ranked if request.filters else ranked[: ctx.depth + 1]
        rows = await self.page(ctx, spec, window)
        total = max(len(ranked), lexical.total or 0) if lexical is not None else len(ranked)
        return Found(
            rows,
            total if ranked else None,
            _terms_of(lexical, pool),
            {c.item: (score, kind) for score, c in scored},
            within,
            scale,
        )

    async def page(self, ctx: SearchContext, spec: SearchSpec, window: list[RankedRow]) -> list[Any]:
        """The page's rows of the fused `window` (item filters and paging applied)."""
        return await ctx.store.ranked_page(ctx, spec, window)


async def _below_floor(lexical: Found | None, dense: DenseFound) -> bool:
    """Whether no query word matched (or bm25 did not run) and the best cosine is under the
    collection's bar: no better than queries of random letters do there (`evidence.bar`)."""
    if lexical is not None and lexical.total is not None:
        return False
    best = float(dense.best.max()) if len(dense.best) else 0.0
    model = embedder()
    if dense.store is None or model is None:
        return True
    return best < await evidence.bar(dense.store, model)


def _terms_of(lexical: Found | None, pool: dict[int, Candidate]) -> Callable[[int], list[str]] | None:
    """The lexical ranking's matched terms, for the chunks it matched (none for the others)."""
    if lexical is None or lexical.terms_of is None:
        return None
    known, terms_of = {c.chunk for c in pool.values() if c.bm25 is not None}, lexical.terms_of
    return lambda chunk: terms_of(chunk) if chunk in known else []
