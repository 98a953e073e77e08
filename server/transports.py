"""Running the server: stdio (single local user) and streamable HTTP at /mcp."""

from __future__ import annotations

import uvicorn
from loguru import logger

from sources.errors import KnowledgeError

from .app import build_server, http_app
from .auth import JwtVerifier
from .config import Settings
from .http_security import is_loopback
from .keys import has_active_keys


class TransportError(KnowledgeError):
    pass


async def run_stdio(settings: Settings) -> None:
    """Serve one local user over stdin/stdout; logs go to stderr only."""
    mcp, host = build_server(settings)
    logger.info("serving stdio for user {}", settings.user)
    try:
        await mcp.run_stdio_async()
    finally:
        await host.pool.close()


async def _require_credentials(settings: Settings) -> None:
    """Refuse to serve authenticated HTTP that nobody could authenticate to."""
    JwtVerifier.from_settings(settings)  # a bad key file or algorithm list fails here, clearly
    configured = settings.jwt_secret is not None or settings.jwt_public_key_file is not None
    if not configured and not await has_active_keys(settings.data_dir):
        raise TransportError(
            "HTTP requires authentication: set jwt_secret (KNOWLEDGE_MCP_JWT_SECRET) or "
            "jwt_public_key_file in [auth], or create an API key with `knowledge-mcp keys create "
            "--user U`; or start with --no-auth on a loopback host (127.0.0.1)"
        )


async def run_http(settings: Settings) -> None:
    """Serve streamable HTTP at /mcp (and GET /healthz)."""
    if settings.no_auth:
        if not is_loopback(settings.host):
            raise TransportError(f"--no-auth is only allowed on a loopback host, not {settings.host}")
    else:
        await _require_credentials(settings)
    mcp, host = build_server(settings, authenticate=not settings.no_auth)
    app = http_app(mcp, settings, host)
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_config=None, access_log=False)
    server = uvicorn.Server(config)
    if settings.no_auth:
        logger.info(
            "serving http://{}:{}/mcp for user {} (no auth, loopback)",
            settings.host,
            settings.port,
            settings.user,
        )
    else:
        logger.info(
            "serving http://{}:{}/mcp (auth: jwt {}, api keys)",
            settings.host,
            settings.port,
            ", ".join(settings.allowed_jwt_algorithms()) or "off",
        )
    try:
        await server.serve()
    finally:
        await host.pool.close()
