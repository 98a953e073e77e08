"""The one decision of who may write (`scopes` says which credentials carry `write`)."""

from __future__ import annotations

from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

from .scopes import WRITE

READ_ONLY_SERVER = "this server is read-only (read_only = true); nothing can be written"
READ_ONLY_CREDENTIAL = (
    "this credential is read-only: writing needs an API key made with "
    "`knowledge-mcp keys create --user U --scope write` or a JWT whose scope claim includes write"
)
NO_CREDENTIAL = "writing over HTTP needs a credential with the write scope; a --no-auth server is read-only"


def write_refusal(*, read_only: bool, authenticated: bool, networked: bool, scope: Any) -> str | None:
    """Why this caller may not write (one sentence), or None when they may.

    `networked`: the request came over HTTP or WebSocket; `scope` is its ASGI scope, where the
    auth middleware put the verified credential."""
    if read_only:
        return READ_ONLY_SERVER
    if authenticated:
        user = scope.get("user") if isinstance(scope, dict) else None
        if isinstance(user, AuthenticatedUser) and WRITE in user.access_token.scopes:
            return None
        return READ_ONLY_CREDENTIAL
    return NO_CREDENTIAL if networked else None
