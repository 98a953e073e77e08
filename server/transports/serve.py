"""Running the server: stdio (single local user), or HTTP: streamable HTTP at /mcp and WebSocket
at /ws on one port."""

from __future__ import annotations

from typing import Any

import anyio
import uvicorn
from loguru import logger
from starlette.types import ASGIApp, Receive, Scope, Send

from knowledge_mcp.sources.errors import KnowledgeError

from ..app import build_server
from ..auth.tokens import JwtVerifier
from ..backend import has_active_keys
from ..config import Settings
from ..watch import start_watching
from .collecting import fewer_collections
from .departures import QuietDepartures, quiet_departure_logs
from .http import http_app
from .http_security import is_loopback
from .stdio import serve_stdio
from .ws.server import ws_app

WS_MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # the same cap the SDK puts on an HTTP request body


class TransportError(KnowledgeError):
    pass


async def run_stdio(settings: Settings) -> None:
    """Serve one local user over stdin/stdout; logs go to stderr only."""
    if settings.workers > 1:
        raise TransportError("--workers applies to --transport http; stdio serves one client")
    mcp, host = build_server(settings)
    logger.info("serving stdio for user {}", settings.user)
    watcher = None
    try:
        host.start_background()
        watcher = start_watching(host, every_user=False)
        with fewer_collections():  # the built server, frozen
            await serve_stdio(mcp)
    finally:
        if watcher is not None:
            await watcher.stop()
        await host.close()


async def _require_credentials(settings: Settings) -> None:
    """Refuse to serve authenticated HTTP or WebSocket that nobody could authenticate to."""
    JwtVerifier.from_settings(settings)  # a bad key file or algorithm list fails here, clearly
    configured = settings.jwt_secret is not None or settings.jwt_public_key_file is not None
    if not configured and not await has_active_keys(settings):
        raise TransportError(
            "HTTP and WebSocket require authentication: set jwt_secret (KNOWLEDGE_MCP_JWT_SECRET) or "
            "jwt_public_key_file in [auth], or create an API key with `knowledge-mcp keys create "
            "--user U`; or start with --no-auth on a loopback host (127.0.0.1)"
        )


def _check_no_auth(settings: Settings) -> None:
    if settings.no_auth and not is_loopback(settings.host):
        raise TransportError(f"--no-auth is only allowed on a loopback host, not {settings.host}")


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    return {
        "host": settings.host,
        "port": settings.port,
        "log_config": None,
        "access_log": False,  # query strings may carry ?token= or ?config=
        "ws": "websockets-sansio",
        "ws_max_size": WS_MAX_MESSAGE_BYTES,
    }


async def _serve(app: Any, settings: Settings, url: str) -> None:
    config = uvicorn.Config(app, **uvicorn_options(settings))
    if settings.no_auth:
        logger.info("serving {} for user {} (no auth, loopback)", url, settings.user)
    else:
        logger.info(
            "serving {} (auth: jwt {}, api keys)", url, ", ".join(settings.allowed_jwt_algorithms()) or "off"
        )
    await uvicorn.Server(config).serve()


async def _prepare_http(settings: Settings) -> None:
    _check_no_auth(settings)
    if not settings.no_auth:
        await _require_credentials(settings)


def serve_http(settings: Settings) -> None:
    """`serve --transport http`: one process, or `workers` processes on one port (`workers.py`)."""
    if settings.workers == 1:
        anyio.run(run_http, settings)
        return
    from .workers.processes import serve_workers

    serve_workers(settings, _prepare_http, uvicorn_options(settings))


async def run_http(settings: Settings) -> None:
    """Serve streamable HTTP at /mcp and WebSocket at /ws on one port (and GET /healthz).

    Both carriers share one server, one set of credentials and one session store: a WebSocket
    handshake goes to the WebSocket endpoint, every other request to the streamable HTTP app."""
    await _prepare_http(settings)
    mcp, host = build_server(settings, authenticate=not settings.no_auth)
    http = http_app(mcp, settings, host)
    ws = ws_app(mcp, host.verifier, settings.ws_idle_timeout_s, loopback=is_loopback(settings.host))
    base = f"{settings.host}:{settings.port}"
    quiet_departure_logs()
    watcher = None
    try:
        host.start_background()
        watcher = start_watching(host, every_user=not settings.no_auth)
        app = QuietDepartures(http_and_ws(http, ws))
        with fewer_collections():  # the built server, frozen
            await _serve(app, settings, f"http://{base}/mcp and ws://{base}/ws")
    finally:
        if watcher is not None:
            await watcher.stop()
        await host.close()


def http_and_ws(http: ASGIApp, ws: ASGIApp) -> ASGIApp:
    """One ASGI app: WebSocket connections to `ws`, HTTP requests and the lifespan to `http`."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await (ws if scope["type"] == "websocket" else http)(scope, receive, send)

    return app
