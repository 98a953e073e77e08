"""Every POST to /mcp answered: its body is read by `inbound.read_message` before the SDK's.

The SDK answers a body it cannot parse with HTTP 400 and id null, and its pydantic dump as the
message (code -32602 for `params` as an array, -32700 for a lone surrogate or deep nesting).
Here a refused body gets the spec's code, the request's id where it is readable and one plain
sentence: HTTP 400 for -32700/-32600 (as the SDK), 200 with the JSON-RPC error for invalid
params of a request, 202 for a notification (never answered). A body that passes goes on to the
SDK unchanged. Wrapped around the /mcp endpoint itself, inside the authentication middleware, so
a client without credentials still gets its 401 and learns nothing else.
"""

from __future__ import annotations

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp_types import INVALID_PARAMS
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .inbound import Refusal, log_refusal, read_message


class CheckedMessages:
    """ASGI: answer a refused JSON-RPC body here; pass every other request on, body replayed."""

    def __init__(self, app: ASGIApp, *, require_user: bool) -> None:
        self.app = app
        self.require_user = require_user

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._checks(scope):
            await self.app(scope, receive, send)
            return
        body, complete = await _read_body(receive, DEFAULT_MAX_REQUEST_BODY_SIZE)
        found = read_message(body) if complete else None
        if isinstance(found, Refusal):
            log_refusal(found, "http")
            await _answer(found)(scope, receive, send)
            return
        await self.app(scope, _replay(body, complete, receive), send)

    def _checks(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope["method"] != "POST":
            return False
        content_type = dict(scope.get("headers", [])).get(b"content-type", b"")
        if not content_type.lower().startswith(b"application/json"):
            return False  # the SDK answers 415
        return not self.require_user or isinstance(scope.get("user"), AuthenticatedUser)


def _answer(refusal: Refusal) -> Response:
    if refusal.answer is None:
        return Response(status_code=202)
    status = 200 if refusal.answer.error.code == INVALID_PARAMS and refusal.answer.id is not None else 400
    body = refusal.answer.model_dump_json(by_alias=True, exclude_unset=True)
    return Response(body, status_code=status, media_type="application/json")


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The body (up to `limit` + 1 bytes) and whether it is all of it."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), size <= limit
        if size > limit:
            return b"".join(chunks), False


def _replay(body: bytes, complete: bool, receive: Receive) -> Receive:
    """`receive` with the part of the body already read put back in front."""
    pending = True

    async def replayed() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": not complete}
        return await receive()

    return replayed


def check_messages(app: Starlette, path: str, *, require_user: bool) -> None:
    """Put `CheckedMessages` around the endpoint of the route at `path` (the SDK's /mcp)."""
    for route in app.routes:
        if isinstance(route, Route) and route.path == path:
            route.app = CheckedMessages(route.app, require_user=require_user)
            return
    raise LookupError(f"no route at {path}")
