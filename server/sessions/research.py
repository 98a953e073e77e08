"""Research sessions: session_start, session_list, session_note, session_export, and each
session's export as a resource (`knowledge://sessions/{session_id}/export.md`, `.json`).

`session_start(name)` begins a named session (or resumes the user's session of that name) and
makes it the connection's current one: later calls without a `session_id` log into it. Its
timeline outlives the idle TTL of the ranking memory (`timeline.py`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from knowledge_mcp.sources.errors import InvalidArgumentError, KnowledgeError
from knowledge_mcp.sources.tooling import Tool, add_tools, tool_result

from ..call import RequestCall, current_call
from ..protocol_errors import protocol_error
from . import export
from .citations import mark_stale, titles
from .store import StoredSession
from .transport import validate_session_id

NAME_LIMIT = 200
LIST_LIMIT = 100
ExportFormat = Literal["markdown", "json"]


class SessionOutput(BaseModel):
    """The session, and what the call did to it."""

    model_config = ConfigDict(extra="allow")

    session_id: str


class ResearchList(BaseModel):
    """Research sessions, most recently active first, with counts of their events."""

    model_config = ConfigDict(extra="allow")

    sessions: list[dict[str, Any]]


class ExportOutput(BaseModel):
    model_config = ConfigDict(extra="allow")

    session_id: str
    content: Any = Field(description="Markdown text, or the JSON timeline.")


def new_session_id() -> str:
    return f"research-{uuid.uuid4().hex[:12]}"


def _name(name: str) -> str:
    cleaned = " ".join(name.split())
    if not 1 <= len(cleaned) <= NAME_LIMIT:
        raise InvalidArgumentError("name", f"give 1..{NAME_LIMIT} characters, e.g. 'sourdough hydration'")
    return cleaned


async def exported(call: RequestCall, session: StoredSession, fmt: ExportFormat) -> tuple[Any, str]:
    """The session's export as content (Markdown text or a JSON object) and as text."""
    kept = await call.sessions.timeline(session.user_id)
    events = await mark_stale(call, await kept.events(session.session_id))
    about = await kept.research(session.session_id)
    if fmt == "json":
        data = export.as_json(session.session_id, about, events)
        return data, json.dumps(data, ensure_ascii=False, indent=1)
    text = export.markdown(session.session_id, about, events, await titles(call, events))
    return text, text


async def required(session_id: str | None) -> tuple[RequestCall, StoredSession]:
    """The call with the session of `session_id` (None: the transport's), and that session."""
    call = await current_call().with_session(session_id)
    if call.session is None:
        raise InvalidArgumentError("session_id", "this connection has no session; pass session_id")
    return call, call.session


async def session_start(
    name: Annotated[str, Field(description="What you are researching; an existing name resumes it.")],
    ctx: Context,
) -> Annotated[CallToolResult, SessionOutput]:
    """Start a named research session, or resume the one of that name.

    It becomes this connection's current session: searches, reads, citations and notes go to
    its timeline. Elsewhere pass its session_id.
    """
    name = _name(name)
    call = await current_call().with_session(None)
    users, transport, user = call.sessions, call.session, call.user_id
    kept = await users.timeline(user)
    session_id = await kept.named(name)
    resumed = session_id is not None
    if session_id is None:
        session_id = new_session_id()
        await kept.create(session_id, name, users.now().isoformat(timespec="microseconds"))
    if transport is not None:
        await users.follow(user, transport.via or transport.session_id, session_id)
    about = await kept.research(session_id)
    assert about is not None
    out = SessionOutput.model_validate(
        {"session_id": session_id, "name": name, "resumed": resumed, "current": transport is not None}
    )
    text = f"{'resumed' if resumed else 'started'} research session {session_id} ({name!r})"
    if transport is None:
        text += "; this connection has no session of its own: pass session_id to the other tools"
    return tool_result(out, text)


async def session_list(
    ctx: Context,
    limit: Annotated[int, Field(ge=1, le=LIST_LIMIT, description="How many.")] = 20,
) -> Annotated[CallToolResult, ResearchList]:
    """List your research sessions, most recent first.

    Each: session_id, name, dates, counts of searches, citations and notes; pass the id to
    session_export or other tools.
    """
    call = current_call()
    kept = await call.sessions.timeline(call.user_id)
    rows = [vars(r) for r in await kept.listed(limit)]
    lines = [
        f"{r['session_id']}: {r['name']} ({r['created_at']} – {r['updated_at']}; "
        f"{r['searches']} searches, {r['citations']} citations, {r['notes']} notes)"
        for r in rows
    ]
    return tool_result(ResearchList(sessions=rows), "\n".join(lines) or "no research sessions yet")


async def session_note(
    text: Annotated[str, Field(description="The note.")],
    ctx: Context,
    session_id: Annotated[str | None, Field(description="Default: the current one.")] = None,
) -> Annotated[CallToolResult, SessionOutput]:
    """Add a note to the session's timeline.

    A finding, a decision, a next step: session_export shows it in order with the rest.
    """
    if not text.strip():
        raise InvalidArgumentError("text", "give the note's text")
    _, session = await required(session_id)
    await session.note(text.strip())
    return tool_result(SessionOutput(session_id=session.session_id), f"noted in {session.session_id}")


async def session_export(
    ctx: Context,
    format: Annotated[ExportFormat, Field(description="markdown (default) or json.")] = "markdown",
    session_id: Annotated[str | None, Field(description="Default: the current one.")] = None,
) -> Annotated[CallToolResult, ExportOutput]:
    """Export a session's timeline as Markdown or JSON.

    Queries, items read, claims with quotes, verdicts and uris (stale if the source changed
    since), notes, in order.
    """
    call, session = await required(session_id)
    content, text = await exported(call, session, format)
    out = ExportOutput.model_validate(
        {"session_id": session.session_id, "format": format, "content": content}
    )
    return tool_result(out, text)


WRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
TOOLS = (
    Tool("session_start", "Start a research session", session_start, WRITES),
    Tool("session_list", "List research sessions", session_list),
    Tool("session_note", "Note in the session", session_note, WRITES),
    Tool("session_export", "Export the session", session_export),
)


async def export_resource(session_id: str, fmt: ExportFormat) -> str:
    try:
        call = current_call()
        session = await call.sessions.open(call.user_id, validate_session_id(session_id))
        return (await exported(call, session, fmt))[1]
    except KnowledgeError as exc:  # -32602 naming the field (else the SDK's -32603 and a trace)
        raise protocol_error(exc) from None


async def export_markdown(session_id: str, ctx: Context) -> str:
    return await export_resource(session_id, "markdown")


async def export_json(session_id: str, ctx: Context) -> str:
    return await export_resource(session_id, "json")


def register(mcp: MCPServer, rename: Callable[[str], str]) -> None:
    """The research tools, and each session's export as a resource."""
    add_tools(mcp, TOOLS, rename)
    mcp.resource(
        "knowledge://sessions/{session_id}/export.md",
        name="session_export_markdown",
        title="Research session (Markdown)",
        description="A session's timeline as Markdown (session_list gives the ids).",
        mime_type="text/markdown",
    )(export_markdown)
    mcp.resource(
        "knowledge://sessions/{session_id}/export.json",
        name="session_export_json",
        title="Research session (JSON)",
        description="A session's timeline as JSON.",
        mime_type="application/json",
    )(export_json)
