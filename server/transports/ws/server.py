"""MCP over WebSocket at /ws: one JSON-RPC message per text frame, subprotocol `mcp`.

The SDK has no WebSocket transport, but its server runs over any pair of memory streams of
`SessionMessage` (as stdio does); this module pumps frames into and out of them.

The handshake is where the connection is first judged:
- the client must offer subprotocol `mcp` (else HTTP 400, no upgrade);
- on loopback hosts, Host and Origin must be loopback (as the SDK checks for HTTP) so a web
  page elsewhere cannot drive a local server (HTTP 421/403);
- with auth on, `Authorization: Bearer <JWT or km_ key>`, `X-API-Key: km_…` or `?token=`
  must verify with the same `KnowledgeTokenVerifier` as HTTP (else HTTP 401, no upgrade).
Every inbound message then carries a `WebSocketRequest` as its request context: the verified
user in `scope["user"]` exactly where the SDK's HTTP auth middleware puts it, the
connection's own session key and its request config. Nothing a client sends changes them.

Before every request the credential is verified again (`auth/credentials.py`): once its key is
revoked or its token has expired, the request is answered with a JSON-RPC error (-32030, one
sentence) and the connection closed with 1008.

Close codes: 1000 normal; 1001 idle for `ws_idle_timeout_s` with no request in flight;
1003 a binary frame; 1008 the credential expired or was revoked. A text frame that is not JSON gets a
JSON-RPC parse error (-32700), one that is JSON but not a JSON-RPC message an invalid-request
error (-32600), a request whose params hold a lone surrogate, deep nesting or a huge number an
invalid-params error (-32602) (`inbound.read_message`); the connection stays open.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, cast

import anyio
from loguru import logger
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream, create_context_streams
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types import (
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from ...app import healthz
from ...auth.credentials import credential_ended
from ...auth.keys import looks_like_key
from ...auth.tokens import API_KEY_HEADER, KnowledgeTokenVerifier
from ...request_config import EMPTY, RequestConfig, parse
from ..inbound import Refusal, log_refusal, read_message

SUBPROTOCOL = "mcp"
CLOSE_GOING_AWAY, CLOSE_UNSUPPORTED_DATA, CLOSE_POLICY = 1001, 1003, 1008
LOOPBACK_SECURITY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
)


class WebSocketRequest:
    """The request context of every message of one connection (`ServerRequestContext.request`)."""

    def __init__(self, user: AccessToken | None, session_id: str, config: RequestConfig) -> None:
        # A fresh scope, not the handshake's: it must not carry the credential headers along.
        self.scope: dict[str, Any] = {"type": "websocket", "path": "/ws"}
        if user is not None:
            self.scope["user"] = AuthenticatedUser(user)
        self.transport_session_id = session_id
        self.config = config
        self._unshown = config.warnings

    def configure(self, update: RequestConfig) -> None:
        """`initialize`'s config over the URL's, key by key."""
        self.config = RequestConfig(update.over(self.config).values)
        self._unshown += update.warnings

    def take_request_config(self) -> RequestConfig:
        warnings, self._unshown = self._unshown, ()
        return RequestConfig(self.config.values, warnings)


class WebSocketEndpoint:
    """The ASGI app at /ws; one MCP connection (and server loop) per WebSocket."""

    def __init__(
        self,
        mcp: MCPServer,
        verifier: KnowledgeTokenVerifier | None,
        *,
        idle_timeout_s: float,
        loopback: bool,
    ) -> None:
        self.mcp = mcp
        self.verifier = verifier
        self.idle_timeout_s = idle_timeout_s
        self.security = TransportSecurityMiddleware(LOOPBACK_SECURITY) if loopback else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        websocket = WebSocket(scope, receive, send)
        if SUBPROTOCOL not in scope.get("subprotocols", []):
            await _deny(websocket, 400, "the WebSocket subprotocol 'mcp' is required")
            return
        if self.security is not None:
            refused = await self.security.validate_request(cast(Request, websocket))
            if refused is not None:
                await _deny(websocket, refused.status_code, bytes(refused.body).decode())
                return
        user: AccessToken | None = None
        if self.verifier is not None:
            user = await self._authenticate(websocket)
            if user is None:
                await _deny(websocket, 401, "missing or invalid credentials", {"WWW-Authenticate": "Bearer"})
                return
        query_config = websocket.query_params.get("config")
        config = parse(query_config, "config (query parameter)") if query_config is not None else EMPTY
        request = WebSocketRequest(user, f"ws-{uuid.uuid4().hex}", config)
        await websocket.accept(subprotocol=SUBPROTOCOL)
        logger.debug("websocket connected session={}", request.transport_session_id)
        await Connection(self.mcp, websocket, request, self.idle_timeout_s, self.verifier).serve()
        logger.debug("websocket closed session={}", request.transport_session_id)

    async def _authenticate(self, websocket: WebSocket) -> AccessToken | None:
        """The first credential offered (header, API-key header, then ?token=), verified."""
        assert self.verifier is not None
        authorization = websocket.headers.get("authorization")
        api_key = websocket.headers.get(API_KEY_HEADER.decode())
        if authorization is not None:
            scheme, _, credential = authorization.partition(" ")
            token = credential.strip() if scheme.lower() == "bearer" else ""
        elif api_key is not None:
            token = api_key.strip() if looks_like_key(api_key.strip()) else ""
        else:
            token = websocket.query_params.get("token", "")
        return await self.verifier.verify_token(token) if token else None


async def _deny(websocket: WebSocket, status: int, text: str, headers: dict[str, str] | None = None) -> None:
    """Refuse the upgrade with an HTTP response (or a bare close where the server can't)."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(PlainTextResponse(text, status_code=status, headers=headers))
    else:
        await websocket.close(CLOSE_POLICY)


class Connection:
    """Pumps one accepted WebSocket into the MCP server loop and back, until either side ends."""

    def __init__(
        self,
        mcp: MCPServer,
        websocket: WebSocket,
        request: WebSocketRequest,
        idle_s: float,
        verifier: KnowledgeTokenVerifier | None = None,
    ):
        self.mcp = mcp
        self.verifier = verifier
        self.websocket = websocket
        self.request = request
        self.idle_s = idle_s
        self.last_activity = time.monotonic()
        self.in_flight: set[RequestId] = set()
        self.send_lock = anyio.Lock()
        self.closed = False
        self.cancel_scope: anyio.CancelScope | None = None
        expires = request.scope["user"].access_token.expires_at if "user" in request.scope else None
        self.expires_at: float | None = None if expires is None else float(expires)

    async def serve(self) -> None:
        to_server, server_reads = create_context_streams[SessionMessage | Exception](0)
        server_writes, from_server = create_context_streams[SessionMessage](0)
        lowlevel = self.mcp._lowlevel_server  # the SDK's own stdio path drives the same loop
        async with anyio.create_task_group() as tg:
            self.cancel_scope = tg.cancel_scope
            tg.start_soon(lowlevel.run, server_reads, server_writes, lowlevel.create_initialization_options())
            tg.start_soon(self._write, from_server)
            tg.start_soon(self._watch)
            async with to_server:
                await self._read(to_server)
            tg.cancel_scope.cancel()  # the client is gone or we closed: drop in-flight work

    async def _read(self, to_server: ContextSendStream[SessionMessage | Exception]) -> None:
        while True:
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            self.last_activity = time.monotonic()
            if message.get("text") is None:
                await self.close(CLOSE_UNSUPPORTED_DATA, "binary frames are not supported; send JSON text")
                return
            parsed = await self._parse(message["text"])
            if parsed is None:
                continue
            if isinstance(parsed, JSONRPCRequest) and not await self._credential_holds():
                logger.info(
                    "websocket call refused: credential ended session={}", self.request.transport_session_id
                )
                await self._send(credential_ended(parsed.id))
                await self._end(CLOSE_POLICY, "credentials revoked or expired")
                return
            if isinstance(parsed, JSONRPCRequest):
                self.in_flight.add(parsed.id)
                if parsed.method == "initialize" and parsed.params and "config" in parsed.params:
                    self.request.configure(parse(parsed.params["config"], "initialize config"))
            metadata = ServerMessageMetadata(
                request_context=self.request, on_request_unanswered=self._unanswered(parsed)
            )
            await to_server.send(SessionMessage(parsed, metadata=metadata))

    async def _credential_holds(self) -> bool:
        """Whether the handshake's credential still holds (asked before every request)."""
        user = self.request.scope.get("user")
        return (
            self.verifier is None
            or not isinstance(user, AuthenticatedUser)
            or (await self.verifier.still_valid(user.access_token))
        )

    async def _parse(self, text: str) -> Any:
        """The frame's JSON-RPC message, or None after answering the error it deserves."""
        found = read_message(text)
        if isinstance(found, Refusal):
            log_refusal(found, "websocket")
            if found.answer is not None:
                await self._send(found.answer.model_dump_json(by_alias=True, exclude_unset=True))
            return None
        return found

    def _unanswered(self, message: Any) -> Any:
        if not isinstance(message, JSONRPCRequest):
            return None
        request_id = message.id

        async def settle() -> None:
            self.in_flight.discard(request_id)

        return settle

    async def _write(self, from_server: ContextReceiveStream[SessionMessage]) -> None:
        async with from_server:
            async for item in from_server:
                if isinstance(item.message, JSONRPCResponse | JSONRPCError):
                    self.in_flight.discard(item.message.id)
                await self._send(item.message.model_dump_json(by_alias=True, exclude_unset=True))

    async def _send(self, text: str) -> None:
        async with self.send_lock:
            if self.closed:
                return
            try:
                await self.websocket.send_text(text)
            except (WebSocketDisconnect, RuntimeError, OSError):
                self.closed = True  # the reader sees the disconnect and ends the connection
                return
        self.last_activity = time.monotonic()

    async def _watch(self) -> None:
        """Close after `idle_s` with no frame and no request in flight, or when the credential expires."""
        while True:
            now = time.monotonic()
            if self.expires_at is not None and time.time() >= self.expires_at:
                await self._end(CLOSE_POLICY, "credentials expired")
                return
            idle_until = self.last_activity + self.idle_s
            if not self.in_flight and now >= idle_until:
                await self._end(CLOSE_GOING_AWAY, "idle timeout")
                return
            wait = idle_until - now if not self.in_flight and idle_until > now else min(self.idle_s, 1.0)
            if self.expires_at is not None:
                wait = min(wait, max(self.expires_at - time.time(), 0.0))
            await anyio.sleep(max(wait, 0.01))

    async def _end(self, code: int, reason: str) -> None:
        await self.close(code, reason)
        if self.cancel_scope is not None:  # don't wait on a client that never answers the close
            self.cancel_scope.cancel()

    async def close(self, code: int, reason: str) -> None:
        """Send a close frame (once); the reader then gets the client's close and ends."""
        async with self.send_lock:
            if self.closed:
                return
            self.closed = True
            try:
                await self.websocket.close(code, reason)
            except (WebSocketDisconnect, RuntimeError, OSError):
                return
        logger.debug("websocket closing: {} {}", code, reason)


def ws_app(
    mcp: MCPServer, verifier: KnowledgeTokenVerifier | None, idle_timeout_s: float, loopback: bool
) -> Starlette:
    """WebSocket MCP at /ws, plus GET /healthz."""
    endpoint = WebSocketEndpoint(mcp, verifier, idle_timeout_s=idle_timeout_s, loopback=loopback)
    return Starlette(routes=[WebSocketRoute("/ws", endpoint), Route("/healthz", healthz, methods=["GET"])])
