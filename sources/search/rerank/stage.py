"""rerank: reorder the fused ranking's best candidates by a finer model, or leave them.

Off unless the caller asked (`SearchRequest.rerank`, the tools' `rerank: true`). Then the
pipeline asks the retrievers and the fuser for the first `pool` items instead of the page
(`pool`: the backend's pool, or the page's depth when it reaches further), the backend scores
(query, passage) for the first `backend.pool` of them within the time budget, they are reordered
by that score (`order.py`: the fused scores stay, in place order), and the page is cut from the
result. Pages past the pool are the fused order, which is the same there, so pages never
overlap or skip.

Any failure — no backend, an error, output not understood, the budget spent — leaves the fused
order and says why in `provider_hint` (the response is `degraded`); the call never fails.
"""

from __future__ import annotations

from dataclasses import replace

import anyio
from loguru import logger

from ...models import ScoreType
from ...storage.store import Hit
from ..describe.results import lexical_score
from ..query import ParsedQuery
from ..request import Found, SearchContext
from .backend import RerankError, Reranking
from .order import passage, reordered, transplanted


def wanted(ctx: SearchContext) -> Reranking | None:
    """The caller's reranking, when this search can be reranked."""
    rerank = ctx.request.rerank
    if rerank is None or rerank.backend is None or ctx.order_by != "relevance":
        return None
    return rerank


def why_not(ctx: SearchContext) -> str | None:
    """Why a search that asked to be reranked cannot be, or None."""
    rerank = ctx.request.rerank
    if rerank is None:
        return None
    if rerank.backend is None:
        return rerank.why_not or "no reranker"
    if ctx.order_by != "relevance":
        return "order_by recent is a date order"
    return None


class CrossRanker:
    """rerank: the backend of the caller's `Reranking` over the fused pool's best items."""

    def pool(self, ctx: SearchContext) -> int | None:
        """How many of the fused ranking's items to retrieve (from the first), or None: the page."""
        rerank = wanted(ctx)
        if rerank is None or rerank.backend is None or ctx.request.offset >= rerank.backend.pool:
            return None  # past the pool, the fused order is the reranked order
        return max(rerank.backend.pool, ctx.depth)

    async def rerank(self, ctx: SearchContext, query: ParsedQuery, found: Found) -> Found:
        reason = why_not(ctx)
        if reason is not None:
            ctx.hints.append(f"not reranked: {reason}")
        rerank = wanted(ctx)
        if rerank is None or rerank.backend is None or self.pool(ctx) is None:
            return found
        backend = rerank.backend
        head = found.rows[: backend.pool]
        if len(head) < 2:
            return found
        passages = [passage(row["title"], row.chunk.get("body")) for row in head]
        try:
            with anyio.fail_after(rerank.timeout_s):
                scores = await backend.score(ctx.request.query, passages)
            if len(scores) != len(head):
                raise ValueError(f"{len(scores)} scores for {len(head)} passages")
        except TimeoutError:
            ctx.hints.append(f"not reranked: {backend.name} took over {rerank.timeout_s:g} s")
            return found
        except Exception as exc:  # the stage's boundary: any failure leaves the fused order
            logger.warning("rerank by {} failed: {}", backend.name, type(exc).__name__)
            ctx.hints.append(f"not reranked: {backend.name} failed ({_reason(exc)})")
            return found
        return _reordered(ctx, query, found, scores)


def _reason(exc: Exception) -> str:
    """A short, content-free reason: our own errors' messages, else the exception's kind."""
    if isinstance(exc, RerankError | ValueError):
        return str(exc)[:160]
    return type(exc).__name__


def _reordered(ctx: SearchContext, query: ParsedQuery, found: Found, scores: list[float]) -> Found:
    head = found.rows[: len(scores)]
    fused = [_fused_score(ctx, query, found, row) for row in head]
    order = reordered(scores)
    rows = [head[n] for n in order] + found.rows[len(head) :]
    kept: dict[int, tuple[float, ScoreType]] = dict(found.scores or {})
    for n, score in zip(order, transplanted(fused), strict=True):
        kept[head[n]["id"]] = (score, "rerank")
    return replace(found, rows=rows, scores=kept)


def _fused_score(ctx: SearchContext, query: ParsedQuery, found: Found, row: Hit) -> float:
    """The score the fused ranking gives `row`: the fuser's, else its calibrated bm25 (as the
    results describe it)."""
    known = (found.scores or {}).get(row["id"])
    if known is not None:
        return known[0]
    return lexical_score(ctx, query, found, row)
