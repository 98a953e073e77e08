"""Running the server: stdio (single local user) and streamable HTTP at /mcp."""

from __future__ import annotations

import ipaddress

import uvicorn
from loguru import logger

from sources.errors import KnowledgeError

from .app import build_server, http_app
from .config import Settings


class TransportError(KnowledgeError):
    pass


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def run_stdio(settings: Settings) -> None:
    """Serve one local user over stdin/stdout; logs go to stderr only."""
    mcp, host = build_server(settings)
    logger.info("serving stdio for user {}", settings.user)
    try:
        await mcp.run_stdio_async()
    finally:
        await host.pool.close()


async def run_http(settings: Settings) -> None:
    """Serve streamable HTTP at /mcp (and GET /healthz)."""
    if not settings.no_auth:
        raise TransportError(
            "HTTP requires authentication, which this version does not provide yet; "
            "start with --no-auth on a loopback host (127.0.0.1)"
        )
    if not is_loopback(settings.host):
        raise TransportError(f"--no-auth is only allowed on a loopback host, not {settings.host}")
    mcp, host = build_server(settings)
    app = http_app(mcp, settings, host)
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_config=None, access_log=False)
    server = uvicorn.Server(config)
    logger.info(
        "serving http://{}:{}/mcp for user {} (no auth, loopback)",
        settings.host,
        settings.port,
        settings.user,
    )
    try:
        await server.serve()
    finally:
        await host.pool.close()
