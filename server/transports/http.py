"""Streamable HTTP as an ASGI app: the SDK's app at /mcp, the API-key header, DELETE ending a session."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette

from ..app import Services
from ..auth.tokens import ApiKeyHeader, authenticated_user
from ..config import Settings
from ..sessions.transport import EndSessionOnDelete
from .http_auth_errors import answer_auth_errors
from .http_messages import check_messages
from .http_security import transport_security
from .workers.session_ids import share_session_ids


def http_app(mcp: MCPServer, settings: Settings, host: Services | None = None) -> Starlette:
    """Streamable HTTP at /mcp, plus /healthz; with `host`, DELETE ends a session's state too.

    With shared state (`database_url`) the SDK transport is stateless, so any worker answers any
    request, and `Mcp-Session-Id` is ours (`session_ids.py`)."""
    stateless = host is not None and host.backend.stateless
    app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        host=settings.host,
        stateless_http=stateless,
        transport_security=transport_security(settings.host, settings.public_url),
    )
    require_user = host is not None and host.authenticated

    def user_of(scope: Any) -> str:
        user = authenticated_user(scope) if require_user else None
        return user or settings.user

    if host is not None and stateless:
        share_session_ids(app, "/mcp", host.sessions, user_of, require_user=require_user)
    check_messages(app, "/mcp", require_user=require_user)
    if require_user:
        answer_auth_errors(app, "/mcp")
        app.add_middleware(ApiKeyHeader)
    if host is not None and not stateless:
        # Runs after the response, when the auth middleware has put the principal in the scope.
        app.add_middleware(EndSessionOnDelete, store=host.sessions, user_of=user_of)
    return app
