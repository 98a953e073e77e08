"""The last two stages: describe each retrieved item as a result, then page the response.

describe: one result per item row, built by the source (`result`: its type-aware fields and
`loc`), with the calibrated score, its rank, how many chunks matched, a snippet centred on the
first match in the best chunk and the query terms it matched (`details.py`). With `details =
False` each result keeps a `Details` record instead, for `details.fill_details` to turn into
them later, for callers that keep only some results (knowledge_search merges several sources'
pages first).

page: `has_more`, `next_offset`, `total_estimated`, `top_score` and the warnings; no crowding
(`collapse`): one place per e-mail thread (its best hit; `thread_hits` counts the others) and
one per content (the same message or file imported twice; `duplicates` lists the others). The
page's offsets count positions before collapsing, as `seen = hide` does in knowledge_search,
so pages never overlap or skip; a page can show fewer than `limit` results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...models import ResultItem, ScoreType, SearchResponse
from ...storage.store import Hit
from ...text.snippets import collapse as collapse_whitespace
from ..query import ParsedQuery
from ..request import Found, SearchContext
from ..scoring import calibrated
from ..stemming import QueryMatcher
from .deferred import DeferredResult
from .details import Details, describe_later, describe_with


def describe(ctx: SearchContext, query: ParsedQuery, found: Found) -> list[Any]:
    """The source's results for the page's rows (the one row past the page is left out); an
    item's further passages (`diversify.py`) follow it, each with its own chunk and loc."""
    rows = page_rows(found.rows, ctx.request.limit)
    if not rows:
        return []
    offset = ctx.request.offset
    hit_chunks = [row.chunk for row in rows]
    matcher = QueryMatcher(query)
    scored = found.scores or {}
    results: list[Any] = []
    leads: dict[int, Any] = {}
    score_of = lexical_scorer(query, found)
    for row, chunk in zip(rows, hit_chunks, strict=True):
        lexical = score_of(row)
        lead = leads.get(row["id"])
        if lead is None:
            hit = _score(scored.get(row["id"]), lexical)
            hit.update(rank=offset + len(leads) + 1, match_count=row["n"])
        else:  # a further passage: its own bm25, never above its item's score
            hit = {"score": min(lead.score, lexical), "rank": lead.rank}
            hit["match_count"] = lead.match_count
        if ctx.request.deferred:  # knowledge_search builds only the results its merge keeps
            result = DeferredResult(ctx.source, row, chunk, hit)
        else:
            result = ctx.source.result(row, chunk, **hit)
        private = result.private
        private["_content_key"] = content_key(result.title, chunk["body"])
        private["_keep"] = ctx.request.fields
        if lead is None:
            leads[row["id"]] = result
        else:
            private["_passage"] = True
        results.append(result)
    records = [_record(ctx, query, matcher, found, r, c) for r, c in zip(results, hit_chunks, strict=True)]
    if not ctx.request.details or ctx.request.deferred:
        for result, details in zip(results, records, strict=True):
            result.private["_details"] = details
    elif found.terms_of is not None:
        describe_later(list(zip(results, records, strict=True)))
    else:
        matches = matcher.find_all([(c["body"], c["title"]) for c in hit_chunks])
        for result, details, match in zip(results, records, matches, strict=True):
            describe_with(result, details, match)
    return results


def _record(
    ctx: SearchContext, query: ParsedQuery, matcher: QueryMatcher, found: Found, result: Any, chunk: Any
) -> Details:
    """What `result`'s details are made of: its hit chunk, and the terms the ranking knows the
    chunk matches (not a further passage's: its own chunk is looked through)."""
    private = result.private
    known = None if found.terms_of is None or private["_passage"] else found.terms_of(chunk["id"])
    # `collapse` hands back its argument when there is nothing to collapse (`content_key`)
    collapsed = private["_content_key"][1] is chunk["body"]
    return Details(chunk, query, matcher, ctx.snippet_length, ctx.request.fields, known, collapsed)


def page_rows(rows: list[Hit], limit: int) -> list[Hit]:
    """The rows of the page's first `limit` items (an item's passages follow it). Pure."""
    items: set[Any] = set()
    for n, row in enumerate(rows):
        if row["id"] not in items:
            if len(items) == limit:
                return rows[:n]
            items.add(row["id"])
    return rows


def page(ctx: SearchContext, results: list[Any], found: Found, model: type[Any]) -> SearchResponse[Any]:
    """The response of `model` (the source's `SearchResponse[...]`) for the described page."""
    if found.total is None:
        return empty(model, ctx.warnings, ctx)
    offset = ctx.request.offset
    items = len({r.uri for r in results})
    has_more = len({row["id"] for row in found.rows}) > ctx.request.limit
    shown = collapse(results)
    # Deferred results are checked when built (`deferred.py`): the response holds them as they are.
    make = model.model_construct if ctx.request.deferred else model
    return make(  # type: ignore[no-any-return]
        results=shown,
        count=len(shown),
        has_more=has_more,
        next_offset=offset + items if has_more else None,
        total_estimated=max(found.total - (len(results) - len(shown)), offset + len(shown)),
        top_score=max((r.score for r in shown), default=None),
        warnings=ctx.warnings,
        **_transparency(ctx),
    )


def content_key(title: str, body: str) -> tuple[str, str]:
    """What makes two hits the same content: the title and the hit chunk's text, whitespace
    collapsed (a message mailed twice, a file imported from two folders). The texts themselves,
    not a digest of them: a dict hashes a string once, where a digest read every character
    again per hit."""
    return collapse_whitespace(title), collapse_whitespace(str(body))


def collapse(results: list[Any]) -> list[Any]:
    """`results` (best first) without crowding: a hit whose content an earlier hit has is listed
    in that one's `duplicates`; a hit of an e-mail thread an earlier hit belongs to is counted in
    that one's `thread_hits`. Each decision depends only on the hits before it, so a longer list
    collapses its first part the same way."""
    by_content: dict[tuple[str, str], ResultItem] = {}
    by_thread: dict[tuple[str, str], ResultItem] = {}
    kept: list[Any] = []
    for result in results:
        key = result.private["_content_key"]
        # a slot of a deferred hit; a field of e-mail results only (no pydantic `__getattr__`)
        thread = result.thread_id if isinstance(result, DeferredResult) else result.__dict__.get("thread_id")
        thread_key = (result.source, thread) if thread else None
        if key is not None and key in by_content:
            leader = by_content[key]
            leader.duplicates = [*(leader.duplicates or []), result.uri]
        elif thread_key is not None and thread_key in by_thread and by_thread[thread_key].uri != result.uri:
            leader = by_thread[thread_key]
            leader.thread_hits = (leader.thread_hits or 0) + 1
        else:
            kept.append(result)
            if key is not None:
                by_content[key] = result
            if thread_key is not None:
                by_thread[thread_key] = result
    return kept


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


def lexical_score(ctx: SearchContext, query: ParsedQuery, found: Found, row: Hit) -> float:
    """A row's calibrated bm25: on the scale the user's sources share, against the query's norm,
    the user's own terms weighing as unexpanded (`ParsedQuery.boost`)."""
    return lexical_scorer(query, found)(row)


def lexical_scorer(query: ParsedQuery, found: Found) -> Callable[[Hit], float]:
    """`lexical_score` of `found`'s rows, the query's own terms counted once for all of them."""
    boost, terms, within, scale = query.boost, len(query.own_terms), found.norm, found.scale
    return lambda row: calibrated(row["b"] / boost, terms, within, scale)


def _score(fused: tuple[float, ScoreType] | None, lexical: float) -> dict[str, Any]:
    """A result's score: the fused one when a fuser gave it, else the calibrated bm25."""
    if fused is None:
        return {"score": lexical}
    return {"score": fused[0], "score_type": fused[1]}


def _transparency(ctx: SearchContext) -> dict[str, Any]:
    """What the response says about how it was made: the query's type, and any stage that
    could not run (`degraded`, `provider_hint`)."""
    return {
        "expanded_terms": ctx.expanded_terms,
        "query_type": ctx.query_type,
        "degraded": True if ctx.hints else None,
        "provider_hint": "; ".join(ctx.hints) if ctx.hints else None,
    }
