"""`Mcp-Session-Id` over workers that share state: our ids on the SDK's stateless transport.

The SDK's stateful streamable HTTP keeps each session's transport in the memory of the process
that answered `initialize`; a request carrying that id on another worker is a 404. With shared
state (`database_url`) the SDK transport runs stateless — any worker answers any request — and
this middleware keeps the 2025-11-25 session contract itself:

- `initialize` without a session id: the response carries a new `Mcp-Session-Id` (minted here),
  which the client sends on every later request; the session's state (seen, viewed, cited,
  defaults) is kept under that id in PostgreSQL, so every worker serves it.
- DELETE with the header ends the session's state (200); without it, 400.
- GET (the optional server-to-client stream) is 405: a stateless worker has nothing to send on it,
  and the spec lets a server decline it. Server-to-client requests (sampling) need the
  single-process stateful mode; the rerank stage falls back to the fused order without them.

2026-07-28 requests (no header, protocol version in every request) pass through untouched.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

from loguru import logger
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...sessions.transport import SESSION_HEADER, SESSION_ID_RE, EndsSessions
from ..http_messages import _read_body, _replay


def is_initialize(body: bytes) -> bool:
    """Whether `body` is one JSON-RPC `initialize` request (pure)."""
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "initialize" and "id" in message


def new_session_id() -> str:
    return uuid.uuid4().hex


class SharedSessionIds:
    """ASGI around the stateless SDK endpoint: mints, honours and ends `Mcp-Session-Id`."""

    def __init__(
        self, app: ASGIApp, store: EndsSessions, user_of: Callable[[Scope], str], *, require_user: bool
    ) -> None:
        self.app = app
        self.store = store
        self.user_of = user_of
        self.require_user = require_user

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._unauthenticated(scope):
            await self.app(scope, receive, send)  # the SDK answers 401
            return
        method, session_id = scope["method"], _header(scope, SESSION_HEADER)
        if method == "GET":
            await _refuse(405, "this server keeps no stream per session; POST requests")(scope, receive, send)
        elif method == "DELETE":
            await self._end(scope, session_id)(scope, receive, send)
        elif method == "POST" and session_id is None:
            body, complete = await _read_body(receive, DEFAULT_MAX_REQUEST_BODY_SIZE)
            answer = _with_session_id(send, new_session_id()) if complete and is_initialize(body) else send
            await self.app(scope, _replay(body, complete, receive), answer)
        else:
            await self.app(scope, receive, send)

    def _unauthenticated(self, scope: Scope) -> bool:
        return self.require_user and not isinstance(scope.get("user"), AuthenticatedUser)

    async def _ended(self, scope: Scope, session_id: str) -> None:
        await self.store.end(self.user_of(scope), session_id)
        logger.debug("session ended by HTTP DELETE")

    def _end(self, scope: Scope, session_id: str | None) -> ASGIApp:
        if session_id is None or not SESSION_ID_RE.fullmatch(session_id):
            return _refuse(400, "Bad Request: Missing session ID")
        store_end = self._ended

        async def ended(scope: Scope, receive: Receive, send: Send) -> None:
            await store_end(scope, session_id)
            await Response(status_code=200)(scope, receive, send)

        return ended


def _with_session_id(send: Send, session_id: str) -> Send:
    """`send` with `Mcp-Session-Id: session_id` on a successful response's headers."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and int(message["status"]) < 400:
            headers = [*message.get("headers", []), (SESSION_HEADER.encode(), session_id.encode())]
            message = {**message, "headers": headers}
        await send(message)

    return sending


def _refuse(status: int, text: str) -> ASGIApp:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": text}})
    headers = {"Allow": "POST, DELETE"} if status == 405 else None
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _header(scope: Scope, name: str) -> str | None:
    wanted = name.encode("latin-1")
    for key, value in scope.get("headers", []):
        if bytes(key).lower() == wanted:
            return bytes(value).decode("latin-1")
    return None


def share_session_ids(
    app: Starlette, path: str, store: EndsSessions, user_of: Callable[[Scope], str], *, require_user: bool
) -> None:
    """Put `SharedSessionIds` around the endpoint of the route at `path` (the SDK's /mcp)."""
    for route in app.routes:
        if isinstance(route, Route) and route.path == path:
            route.app = SharedSessionIds(route.app, store, user_of, require_user=require_user)
            return
    raise LookupError(f"no route at {path}")
