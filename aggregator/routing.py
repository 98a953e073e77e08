"""knowledge_get: route a `uri` (or `source` + `id`) to its source's get, and note the read."""

from __future__ import annotations

from typing import Any

from knowledge_mcp.sources.errors import InvalidArgumentError, SessionWriteError
from knowledge_mcp.sources.models import GetResponse, Loc, Retrieval
from knowledge_mcp.sources.registry import SOURCES

from .calls import AggregatorCall


def parse_uri(uri: str | None, source: str | None, item_id: str | None) -> tuple[str, str]:
    """(source, id) of `notes://<id>`-style uri, or of `source` + `id`."""
    schemes = ", ".join(f"{name}://" for name in SOURCES)
    if uri is not None:
        scheme, sep, rest = uri.strip().partition("://")
        if not sep or scheme not in SOURCES or not rest:
            raise InvalidArgumentError(
                "uri", f"must be <source>://<id> with a source of {schemes}; got {uri!r}"
            )
        if (source is not None and source != scheme) or (item_id is not None and item_id != rest):
            raise InvalidArgumentError("uri", "give either uri, or source and id, not both differing")
        return scheme, rest
    if source is None or item_id is None:
        raise InvalidArgumentError("uri", f"give a uri ({schemes}…) from a search result, or source and id")
    if source not in SOURCES:
        raise InvalidArgumentError("source", f"unknown {source!r}; allowed: {', '.join(SOURCES)}")
    return source, item_id


async def routed_get(
    call: AggregatorCall,
    uri: str | None = None,
    *,
    source: str | None = None,
    item_id: str | None = None,
    loc: Loc | None = None,
    query: str | None = None,
    retrieval: Retrieval | None = None,
    session_id: str | None = None,
) -> GetResponse[Any]:
    name, resolved = parse_uri(uri, source, item_id)
    call = await call.with_session(session_id)
    session = call.session
    src = SOURCES[name]
    db = await call.database(name)
    response = await src.get(
        db,
        resolved,
        loc=loc,
        query=query,
        retrieval=retrieval,
        defaults=call.defaults(),
        databases=call.database,  # the meta is completed before it is fitted to the budget
    )
    if session is not None:
        try:
            await session.mark_viewed(response.meta.uri)
        except SessionWriteError as exc:  # the item was read; only the session's note of it is lost
            response.warnings.append(f"{exc}: this item is not marked viewed")
    return response
