"""knowledge_search: ask every source at once (`fanout`), each within a time limit, and merge the
answers.

A source that fails or is too slow becomes a warning (`degraded`, `provider_hint`); the call
still answers with the others. The session hides (or downranks) what it already returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from knowledge_mcp.sources.errors import InvalidArgumentError, SessionWriteError
from knowledge_mcp.sources.models import OrderBy
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.search.dense.fusion import FLOOR_WARNING
from knowledge_mcp.sources.search.describe.deferred import DeferredResult
from knowledge_mcp.sources.search.describe.details import fill_details
from knowledge_mcp.sources.search.lexical.term_stats import SharedScale
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.search.request import ResultField, SearchMode, SearchRequest
from knowledge_mcp.sources.search.rerank.backend import Reranking
from knowledge_mcp.sources.source import SearchOptions
from knowledge_mcp.sources.wire import rounded

from .calls import AggregatorCall, Session
from .fanout import Answer, Stores, completed, fan_out
from .merging.diversity import capped, sorted_lists
from .merging.merge import Candidates, Merged, SeenMode, cut_page, fetch_size
from .models import KnowledgeSearchResponse, SeenApplied

DEFAULT_LIMIT = 20
SEEN_URIS_SHOWN = 20
"""`seen_applied` names at most this many of the items the session hid or down-ranked."""
DOWNRANK_WINDOW = 100
"""`seen = downrank` halves the scores of the session's last this many returned URIs (about the
last five pages): what the assistant has just been shown. Older ones rank as if unseen, so a
long session does not bury the collection (`docs/performance.md`, "Sessions: the downrank
window"). `hide` drops every seen URI."""


@dataclass
class KnowledgeQuery:
    query: str
    sources: Sequence[str] | None = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0
    snippet_length: int | None = None
    order_by: OrderBy | None = None
    filters: Mapping[str, Mapping[str, Any]] | None = None
    min_score: float | None = None
    seen: SeenMode = "downrank"
    session_id: str | None = None
    mode: SearchMode = "auto"
    rerank: Reranking | None = None
    expand: bool = True
    per_item: int = 1
    fields: Sequence[ResultField] | None = None


def chosen_sources(names: Sequence[str] | None) -> list[str]:
    if names is None:
        return list(SOURCES)
    if not names:
        raise InvalidArgumentError("sources", f"name at least one of {', '.join(SOURCES)}, or leave it out")
    unknown = [n for n in names if n not in SOURCES]
    if unknown:
        raise InvalidArgumentError("sources", f"unknown {unknown[0]!r}; allowed: {', '.join(SOURCES)}")
    return list(dict.fromkeys(names))


def source_options(filters: Mapping[str, Mapping[str, Any]] | None) -> dict[str, SearchOptions]:
    """Each source's filters, validated by its own options model; errors name the full path."""
    options: dict[str, SearchOptions] = {}
    for name, values in (filters or {}).items():
        if name not in SOURCES:
            raise InvalidArgumentError(f"filters.{name}", f"unknown source; allowed: {', '.join(SOURCES)}")
        model = SOURCES[name].options_model
        try:
            options[name] = model.model_validate(values)
        except ValidationError as exc:
            error = exc.errors()[0]
            path = ".".join(str(p) for p in error["loc"])
            where = f"filters.{name}.{path}" if path else f"filters.{name}"
            allowed = ", ".join(model.model_fields) or "none"
            message = "unknown option" if error["type"] == "extra_forbidden" else error["msg"]
            raise InvalidArgumentError(where, f"{message}; options of {name}: {allowed}") from None
    return options


async def knowledge_search(
    call: AggregatorCall, q: KnowledgeQuery, *, timeout_s: float
) -> KnowledgeSearchResponse:
    names = chosen_sources(q.sources)
    options = source_options(q.filters)
    unused = sorted(set(options) - set(names))
    if unused:
        raise InvalidArgumentError(f"filters.{unused[0]}", "filters a source that `sources` leaves out")
    call = await call.with_session(q.session_id)
    session = call.session
    defaults = call.defaults()
    order_by: OrderBy = q.order_by or defaults.order_by  # type: ignore[assignment]
    seen = seen_before_this_query(session, q)
    if q.seen == "downrank":
        seen = seen[-DOWNRANK_WINDOW:]
    size = fetch_size(q.offset, q.limit, q.seen, seen)
    stores = Stores(call)
    requests: dict[str, SearchRequest] = {}
    glossaries: dict[Any, Any] = {}  # read once for all the sources (`SearchRequest.glossaries`)
    for name in names:
        requests[name] = await SOURCES[name].search_request(
            q.query,
            options.get(name),
            limit=size,
            snippet_length=q.snippet_length,
            order_by=order_by,
            databases=stores,
            mode=q.mode,
        )
        # Results (and their snippets) only for the page the merge keeps (below), not for every
        # fetched hit: each source hands over deferred ones (`describe.deferred`).
        requests[name].details = False
        requests[name].deferred = True
        requests[name].rerank = q.rerank
        requests[name].expand = q.expand
        requests[name].per_item = q.per_item
        requests[name].fields = frozenset(q.fields or ())
        requests[name].glossaries = glossaries
    parsed = parse_query(q.query)
    if order_by == "relevance" and len(names) > 1 and not parsed.is_empty:
        shared = SharedScale(names, parsed)  # put together as the sources count (`counted`)
        for request in requests.values():
            request.shared = shared
    if q.rerank is not None and q.rerank.backend is not None:
        timeout_s += q.rerank.timeout_s  # each source's rerank stage has its own budget
    answers = await fan_out(stores, requests, defaults, timeout_s)
    response = merged_response(answers, q, order_by, set(seen) if session is not None else set(), size)
    await completed(stores, response, timeout_s)
    response.session_applied = session is not None
    if session is not None and response.results:
        try:
            await session.record_results(q.query, [r.uri for r in response.results])
        except SessionWriteError as exc:  # the answer stands; only its memory is lost
            response.warnings.append(f"{exc}: these results are not marked seen")
    return response


def seen_before_this_query(session: Session | None, q: KnowledgeQuery) -> list[str]:
    """The session's seen URIs as they were before this query's first page.

    With `downrank`, every page re-ranks against the seen set, and each page adds its results to
    it; ranking page 2 against a set that includes page 1 would reorder and overlap. When the
    session's last query is this one, its earlier pages are the last `offset` URIs recorded
    (recording moves a URI to the end), so they are left out. (`hide` pages are already exact:
    offsets count positions before hiding.) `show` ranks as if nothing was seen: none are read.
    """
    if session is None or q.seen == "show":
        return []
    seen = list(session.seen)
    recent = session.recent_queries
    if q.seen == "downrank" and q.offset and recent and recent[-1] == q.query.strip():
        return seen[: max(0, len(seen) - q.offset)]
    return seen


def merged_response(
    answers: list[Answer], q: KnowledgeQuery, order_by: OrderBy, seen: set[str], fetched: int
) -> KnowledgeSearchResponse:
    lists: list[list[Merged]] = []
    warnings: list[str] = []
    truncated, total = False, 0
    for a in answers:
        if a.response is None:
            warnings.append(f"{a.source}: {a.failure}; results come from the other sources")
            continue
        lists.append(capped(list(a.response.results), q.per_item))
        truncated = truncated or a.response.has_more
        total += a.response.total_estimated
        # A source with nothing close is no news while another answers (said below if none does).
        warnings += [w for w in a.response.warnings if w != FLOOR_WARNING]
    page = cut_page(
        Candidates(sorted_lists(lists, order_by), truncated, total),
        offset=q.offset,
        limit=q.limit,
        order_by=order_by,
        min_score=q.min_score,
        seen=seen,
        seen_mode=q.seen,
        fetched=fetched,
    )
    results = [r.build() if isinstance(r, DeferredResult) else r for r in page.results]
    fill_details(results)
    warnings += page.warnings
    if not page.results and any(
        a.response is not None and FLOOR_WARNING in a.response.warnings for a in answers
    ):
        warnings.append(FLOOR_WARNING)
    if q.min_score is not None and page.best_score is not None and page.best_score < q.min_score:
        warnings.append(
            f"no result scored min_score={q.min_score:g} or more (best {rounded(page.best_score)}); "
            "lower min_score or rephrase the query"
        )
    failed = [a.source for a in answers if a.response is None]
    applied = None
    if page.seen_applied and q.seen != "show":
        uris = page.seen_applied
        applied = SeenApplied(mode=q.seen, count=len(uris), uris=uris[:SEEN_URIS_SHOWN])
    hints = failed + [
        f"{a.source}: {a.response.provider_hint}" for a in answers if a.response and a.response.degraded
    ]
    return KnowledgeSearchResponse(
        seen_applied=applied,
        results=results,
        count=len(results),
        has_more=page.has_more,
        next_offset=page.next_offset,
        total_estimated=page.total_estimated,
        top_score=max((r.score for r in results), default=None),
        warnings=list(dict.fromkeys(warnings)),
        expanded_terms=next((a.response.expanded_terms for a in answers if a.response is not None), None),
        query_type=next((a.response.query_type for a in answers if a.response is not None), None),
        degraded=True if hints else None,
        provider_hint=", ".join(hints) if hints else None,
    )
