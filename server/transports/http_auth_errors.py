"""A refused credential on a POST to /mcp is answered as a JSON-RPC error, still with its 401.

The SDK's auth middleware answers a request whose credential is missing, unknown, revoked or
expired with HTTP 401, `WWW-Authenticate` (what OAuth clients act on) and an RFC 6750 body
(`{"error": "invalid_token", …}`), which an MCP client can only report as "Server returned an
error response". Here the body of that 401 becomes a JSON-RPC error (id null, code -32030, one
sentence), which the SDK's client hands to the caller as the answer to its call; the status
and headers stay as they were. Credentials are checked on every request
(`auth/credentials.py`), so this is also how an open session learns that its key was revoked.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..auth.credentials import credential_ended

REFUSED = 401
BODY = credential_ended(None).encode()


class JsonRpcAuthErrors:
    """ASGI: a 401 answer to a POST gets the JSON-RPC error as its body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        refused = False

        async def rewriting(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and message["status"] == REFUSED:
                refused = True
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"content-length"]
                headers.append((b"content-length", str(len(BODY)).encode()))
                message = {**message, "headers": headers}
            elif message["type"] == "http.response.body" and refused:
                if message.get("more_body", False):
                    return  # the SDK's body, dropped
                message = {"type": "http.response.body", "body": BODY, "more_body": False}
            await send(message)

        await self.app(scope, receive, rewriting)


def answer_auth_errors(app: Starlette, path: str) -> None:
    """Put `JsonRpcAuthErrors` around the endpoint of the route at `path` (outside its auth check)."""
    for route in app.routes:
        if isinstance(route, Route) and route.path == path:
            route.app = JsonRpcAuthErrors(route.app)
            return
    raise LookupError(f"no route at {path}")
