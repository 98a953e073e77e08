"""The session tools (DESIGN §8): session_info, session_cite, session_set_defaults, session_reset;
and the research tools (`research.py`).

Their published output schema is one small `SessionOutput` (the session id; the rest is
described by the tools): the full `SessionInfo` would cost every host ~150 tokens per tool on
every turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from knowledge_mcp.sources.errors import InvalidArgumentError
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.text.snippets import clamp
from knowledge_mcp.sources.tooling import Tool, add_tools, tool_result

from ..call import RequestCall, current_call
from . import research
from .citations import citation_view, cite_records, mark_stale, once
from .research import SessionOutput
from .store import StoredSession

MAX_CITE = 100
ORDER_BY = ("relevance", "recent")
# (low, high) of each numeric default; the same ranges as the tools' own arguments.
RANGES = {
    "snippet_length": (50, 1000),
    "max_tokens": (50, 32000),
    "sibling_window": (0, 20),
    "chars_per_token": (1, 10),
}

SessionId = Annotated[
    str | None,
    Field(description="Your own session key; default: the current one."),
]
Knob = Annotated[int | None, Field(description="Omit to keep.")]


class SessionDefaults(BaseModel):
    snippet_length: int
    max_tokens: int
    sibling_window: int
    order_by: str
    chars_per_token: int | None = Field(default=None, description="Unset: budgets count cl100k tokens.")


class SessionInfo(BaseModel):
    session_id: str
    seen: list[str]
    viewed: list[str]
    cited: list[str]
    recent_queries: list[str]
    defaults: SessionDefaults
    expires_at: str
    name: str | None = None
    citations: list[dict[str, Any]] = Field(default_factory=list)


class SessionUpdate(SessionInfo):
    warnings: list[str] = Field(default_factory=list)


async def _info(call: RequestCall, session: StoredSession) -> dict[str, Any]:
    defaults = call.defaults()
    kept = await call.sessions.timeline(session.user_id)
    cites = await kept.events(session.session_id, "cite")
    about = await kept.research(session.session_id)
    return {
        "name": about.name if about is not None else None,
        "citations": [citation_view(e.payload) for e in await mark_stale(call, cites)],
        "session_id": session.session_id,
        "seen": list(session.seen),
        "viewed": list(session.viewed),
        "cited": list(session.cited),
        "recent_queries": list(session.recent_queries),
        "defaults": SessionDefaults(**asdict(defaults)),
        "expires_at": session.expires_at.isoformat(),
    }


def _render(info: SessionInfo) -> str:
    d = info.defaults
    lines = [
        f"session {info.session_id} (expires {info.expires_at}): {len(info.seen)} seen, "
        f"{len(info.viewed)} viewed, {len(info.cited)} cited",
        f"defaults: snippet_length={d.snippet_length} max_tokens={d.max_tokens} "
        f"sibling_window={d.sibling_window} order_by={d.order_by} chars_per_token={d.chars_per_token}",
    ]
    if info.recent_queries:
        lines.append("recent queries: " + "; ".join(info.recent_queries[-10:]))
    for c in info.citations:
        line = f"cited {c['uri']}"
        line += f" for {c['claim']!r}" if c.get("claim") else ""
        if "found" in c:
            line += " (quote verified)" if c["found"] else " (quote NOT found)"
        lines.append(line + (" STALE: the source changed" if c.get("stale") else ""))
    lines += [f"warning: {w}" for w in getattr(info, "warnings", [])]
    return "\n".join(lines)


def _check_uris(uris: list[str]) -> list[str]:
    if not 1 <= len(uris) <= MAX_CITE:
        raise InvalidArgumentError("uris", f"give 1..{MAX_CITE} uris")
    for uri in uris:
        scheme, sep, rest = uri.partition("://")
        if not sep or scheme not in SOURCES or not rest.strip():
            allowed = ", ".join(f"{s}://<id>" for s in SOURCES)
            raise InvalidArgumentError("uris", f"{uri!r} is not an item uri; expected one of {allowed}")
    return uris


async def required(session_id: str | None) -> tuple[RequestCall, StoredSession]:
    """The call with the session of `session_id` (None: the transport's), and that session."""
    call = await current_call().with_session(session_id)
    if call.session is None:
        raise InvalidArgumentError(
            "session_id",
            "this connection has no session of its own; pass session_id (any key you choose)",
        )
    return call, call.session


async def respond(
    call: RequestCall, session: StoredSession, warnings: list[str] | None = None
) -> CallToolResult:
    info = await _info(call, session)
    model = SessionInfo(**info) if warnings is None else SessionUpdate(**info, warnings=warnings)
    return tool_result(model, _render(model))


async def session_info(
    ctx: Context, session_id: SessionId = None
) -> Annotated[CallToolResult, SessionOutput]:
    """What this session remembers.

    `seen` (returned by searches), `viewed` (read), `citations` (claim, quote verdict, `stale`
    if the source changed since), recent queries, defaults, expiry.
    """
    return await respond(*await required(session_id))


async def session_cite(
    uris: Annotated[list[str], Field(description="Item uris, e.g. notes://<id>.")],
    ctx: Context,
    claim: Annotated[str | None, Field(description="What they support.")] = None,
    quote: Annotated[str | None, Field(description="Words quoted from them: verified.")] = None,
    session_id: SessionId = None,
) -> Annotated[CallToolResult, SessionOutput]:
    """Record that your answer cites these items (1..100 uris).

    Give the `claim` they support and a `quote`: it is checked as verify_quote does (see
    `citations`, `warnings`).
    """
    call, session = await required(session_id)
    uris = once(_check_uris(uris))  # a uri named twice is cited (and its quote checked) once
    records, warnings = await cite_records(call, uris, claim, quote)
    await session.cite(uris, records)
    return await respond(call, session, warnings)


async def session_set_defaults(
    ctx: Context,
    session_id: SessionId = None,
    snippet_length: Knob = None,
    max_tokens: Knob = None,
    sibling_window: Knob = None,
    order_by: Annotated[str | None, Field(description="relevance or recent; omit to keep.")] = None,
    chars_per_token: Knob = None,
) -> Annotated[CallToolResult, SessionOutput]:
    """Set this session's defaults for later searches and gets (omitted ones are kept).

    Out-of-range numbers are clamped (see `warnings`); a tool's own argument still wins;
    session_reset returns to the server's defaults.
    """
    call, session = await required(session_id)
    if order_by is not None and order_by not in ORDER_BY:
        raise InvalidArgumentError("order_by", f"{order_by!r} is not one of {', '.join(ORDER_BY)}")
    warnings: list[str] = []
    given = {"snippet_length": snippet_length, "max_tokens": max_tokens}
    given |= {"sibling_window": sibling_window, "chars_per_token": chars_per_token}
    values: dict[str, Any] = {
        name: clamp(name, value, value, *RANGES[name], warnings)
        for name, value in given.items()
        if value is not None
    }
    if order_by is not None:
        values["order_by"] = order_by
    await session.set_defaults(values)
    return await respond(call, session, warnings)


async def session_reset(
    ctx: Context, session_id: SessionId = None
) -> Annotated[CallToolResult, SessionOutput]:
    """Forget this session's seen, viewed and cited items, queries and defaults.

    Use it for an unrelated question; a named research session keeps its timeline.
    """
    call, session = await required(session_id)
    await session.reset()
    return await respond(call, session, [])


WRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
RESETS = WRITES.model_copy(update={"destructive_hint": True})
TOOLS = (
    Tool("session_info", "Show the research session", session_info),
    Tool("session_cite", "Cite items in the session", session_cite, WRITES),
    Tool("session_set_defaults", "Set session defaults", session_set_defaults, WRITES),
    Tool("session_reset", "Reset the research session", session_reset, RESETS),
)


def register(mcp: MCPServer, rename: Callable[[str], str]) -> None:
    """The session tools, then the research tools and their export resources."""
    add_tools(mcp, TOOLS, rename)
    research.register(mcp, rename)
