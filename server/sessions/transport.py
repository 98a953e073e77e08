"""Which session a request belongs to (DESIGN §8), and ending it with HTTP DELETE.

Key precedence: an explicit `session_id` argument; else the transport's session — the
`Mcp-Session-Id` header on stateful streamable HTTP (2025-11-25), the WebSocket connection,
the server process on stdio
and the in-memory transport (overridable by `KNOWLEDGE_MCP_SESSION`); else none. The
2026-07-28 revision is stateless: HTTP requests without the header have no transport session.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from loguru import logger
from mcp.server.context import ServerRequestContext
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from knowledge_mcp.sources.errors import InvalidArgumentError, KnowledgeError
from knowledge_mcp.sources.storage.damage.failures import database_problem

from .store import StoredSession

SESSION_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
SESSION_HEADER = "mcp-session-id"
SESSION_ENV = "KNOWLEDGE_MCP_SESSION"
# One session per server process on stdio (and the in-memory transport).
PROCESS_SESSION_ID = f"process-{uuid.uuid4().hex}"


def validate_session_id(session_id: str) -> str:
    if not SESSION_ID_RE.fullmatch(session_id):
        raise InvalidArgumentError(
            "session_id", "must be 1..128 characters of letters, digits and . _ : - (e.g. research-42)"
        )
    return session_id


def process_session_id() -> str:
    """The stdio process's session: `KNOWLEDGE_MCP_SESSION` when set and valid, else per process."""
    configured = os.environ.get(SESSION_ENV)
    if configured:
        if SESSION_ID_RE.fullmatch(configured):
            return configured
        logger.warning("{} is not a valid session id; using this process's own session", SESSION_ENV)
    return PROCESS_SESSION_ID


def transport_session_id(request: ServerRequestContext[Any, Any], process_id: str) -> str | None:
    """The transport's own session id for this request, or None (stateless HTTP)."""
    own = getattr(request.request, "transport_session_id", None)
    if isinstance(own, str):  # a WebSocket connection: one session per connection
        return own
    headers = getattr(request.request, "headers", None)
    if headers is None:  # stdio and the in-memory transport carry no HTTP request
        return process_id
    value = headers.get(SESSION_HEADER)
    return value if value is not None and SESSION_ID_RE.fullmatch(value) else None


def client_name(request: ServerRequestContext[Any, Any]) -> str | None:
    params = getattr(request.session, "client_params", None)
    if params is None or params.client_info is None:
        return None
    name = params.client_info.name
    return name if isinstance(name, str) else None


async def preloaded(load: Callable[[], Awaitable[StoredSession | None]]) -> StoredSession | None:
    """The transport's session, loaded before a tool call runs (`server/call.py`), so that the
    call's defaults apply it without I/O. A store failure is logged and the call goes on
    without a session.
    """
    try:
        return await load()
    except Exception as exc:  # a broken session store must not take the tools down with it
        problem = database_problem(exc)
        reason = (
            f"sessions.db {problem}" if problem else str(exc) if isinstance(exc, KnowledgeError) else None
        )
        if reason is None:
            logger.exception("session could not be loaded; serving without it")
        else:  # a full disk, a damaged or locked sessions.db: said in one line
            logger.warning("session could not be loaded ({}); serving without it", reason)
        return None


class EndsSessions(Protocol):
    async def end(self, user_id: str, session_id: str) -> None: ...


class EndSessionOnDelete:
    """ASGI middleware: a successful HTTP DELETE with `Mcp-Session-Id` drops that session's state.

    The SDK's streamable HTTP transport terminates its own session on DELETE but offers no
    callback, so we watch the response status on the way out.
    """

    def __init__(self, app: ASGIApp, store: EndsSessions, user_of: Callable[[Scope], str]) -> None:
        self.app = app
        self.store = store
        self.user_of = user_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "DELETE":
            await self.app(scope, receive, send)
            return
        session_id = _header(scope, SESSION_HEADER)
        status: list[int] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        await self.app(scope, receive, watch)
        if session_id and SESSION_ID_RE.fullmatch(session_id) and status and 200 <= status[0] < 300:
            await self.store.end(self.user_of(scope), session_id)
            logger.debug("session ended by HTTP DELETE")


def _header(scope: Scope, name: str) -> str | None:
    wanted = name.encode("latin-1")
    for key, value in scope.get("headers", []):
        if key.lower() == wanted:
            return bytes(value).decode("latin-1")
    return None
