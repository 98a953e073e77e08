"""The last two stages: describe each retrieved item as a result, then page the response.

describe: one result per item row, built by the source (`result`: its type-aware fields and
`loc`), with the calibrated score, its rank, how many chunks matched, a snippet centred on the
first match in the best chunk and the query terms it matched. With `details = False` the
snippet and matched terms are left for `ResultItem.fill_details`, for callers that keep only
some results (knowledge_search merges several sources' pages first).

page: `has_more`, `next_offset`, `total_estimated`, `top_score` and the warnings.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import aiosqlite

from ..models import ResultItem, ScoreType, SearchResponse
from ..text.snippets import make_snippet
from .lexical.sql import hit_chunk
from .query import ParsedQuery
from .request import Found, SearchContext
from .scoring import calibrated
from .stemming import Matches, QueryMatcher


def describe(ctx: SearchContext, query: ParsedQuery, found: Found) -> list[Any]:
    """The source's results for the page's rows (the one row past the page is left out)."""
    rows = found.rows[: ctx.request.limit]
    if not rows:
        return []
    offset, snippet_length = ctx.request.offset, ctx.snippet_length
    hit_chunks = [hit_chunk(row) for row in rows]
    matcher = QueryMatcher(query)
    scored = found.scores or {}
    results = [
        ctx.source.result(
            row,
            chunk,
            **_score(scored.get(row["id"]), row["b"], len(query.terms)),
            rank=offset + position + 1,
            match_count=row["n"],
        )
        for position, (row, chunk) in enumerate(zip(rows, hit_chunks, strict=True))
    ]
    terms_of = found.terms_of
    if not ctx.request.details:
        for result, chunk in zip(results, hit_chunks, strict=True):
            result._details = partial(_describe_later, result, chunk, matcher, snippet_length, terms_of)
    elif terms_of is not None:
        for result, chunk in zip(results, hit_chunks, strict=True):
            _describe_later(result, chunk, matcher, snippet_length, terms_of)
    else:
        matches = matcher.find_all([(c["body"], c["title"]) for c in hit_chunks])
        for result, chunk, match in zip(results, hit_chunks, matches, strict=True):
            _describe(result, chunk, match, snippet_length)
    return results


def page(ctx: SearchContext, results: list[Any], found: Found, model: type[Any]) -> SearchResponse[Any]:
    """The response of `model` (the source's `SearchResponse[...]`) for the described page."""
    if found.total is None:
        return empty(model, ctx.warnings, ctx)
    offset = ctx.request.offset
    has_more = len(found.rows) > ctx.request.limit
    return model(  # type: ignore[no-any-return]
        results=results,
        count=len(results),
        has_more=has_more,
        next_offset=offset + len(results) if has_more else None,
        total_estimated=max(found.total, offset + len(results)),
        top_score=max((r.score for r in results), default=None),
        warnings=ctx.warnings,
        **_transparency(ctx),
    )


def empty(model: type[Any], warnings: list[str], ctx: SearchContext | None = None) -> SearchResponse[Any]:
    """A response with no results."""
    return model(  # type: ignore[no-any-return]
        results=[],
        count=0,
        has_more=False,
        next_offset=None,
        total_estimated=0,
        warnings=warnings,
        **(_transparency(ctx) if ctx is not None else {}),
    )


def _score(fused: tuple[float, ScoreType] | None, bm25: float, terms: int) -> dict[str, Any]:
    """A result's score: the fused one when a fuser gave it, else the calibrated bm25."""
    if fused is None:
        return {"score": calibrated(bm25, terms)}
    return {"score": fused[0], "score_type": fused[1]}


def _transparency(ctx: SearchContext) -> dict[str, Any]:
    """What the response says about how it was made: the query's type, and any stage that
    could not run (`degraded`, `provider_hint`)."""
    return {
        "query_type": ctx.query_type,
        "degraded": True if ctx.hints else None,
        "provider_hint": "; ".join(ctx.hints) if ctx.hints else None,
    }


def _describe(result: ResultItem, chunk: aiosqlite.Row, found: Matches, snippet_length: int) -> None:
    lead = result.lead(found.first is not None)
    if lead is None:
        result.snippet = make_snippet(chunk["body"], snippet_length, found.first)
    else:  # the source shows its lead text (a card's description) for a hit on the name alone
        result.snippet, result.loc = make_snippet(lead[0], snippet_length), lead[1]
    result.matched_terms = found.terms


def _describe_later(
    result: ResultItem,
    chunk: aiosqlite.Row,
    matcher: QueryMatcher,
    snippet_length: int,
    terms_of: Callable[[int], list[str]] | None = None,
) -> None:
    if terms_of is None:
        found = matcher.find(chunk["body"], chunk["title"])
    else:  # the ranking knows which terms the chunk matches: only the snippet's place is looked for
        terms = terms_of(chunk["id"])
        found = Matches(matcher.first_match(chunk["body"], terms), terms)
    _describe(result, chunk, found, snippet_length)
