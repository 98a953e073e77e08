"""Credentials that end: a verified credential is trusted for a few seconds, then checked again.

Every HTTP request and every WebSocket call asks `KnowledgeTokenVerifier.verify_token`, so an
API key revoked with `knowledge-mcp keys revoke` (in keys.db or PostgreSQL) and a JWT whose `exp`
has passed lose their authority on connections that are already open. This cache spares the key
store a look-up per call for at most `credential_cache_s` seconds (0: none); an expiry is
checked on every call, cached or not. Only valid credentials are kept (by their hash), so a
flood of made-up tokens never fills it with anything but misses.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

from cachetools import TTLCache
from mcp.server.auth.provider import AccessToken
from mcp_types import ErrorData, JSONRPCError, RequestId

MAX_CACHE_S = 5.0
CACHE_SIZE = 10_000
CREDENTIAL_ENDED_CODE = -32030
"""The JSON-RPC error code of a call refused because its credential is no longer (or not) valid."""
CREDENTIAL_ENDED = (
    "this request's credential is missing, unknown, revoked or expired; "
    "connect again with a valid API key or token"
)


def credential_ended(request_id: RequestId | None) -> str:
    """The JSON-RPC error answering a request whose credential no longer holds (id None: unread)."""
    error = ErrorData(code=CREDENTIAL_ENDED_CODE, message=CREDENTIAL_ENDED)
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=error).model_dump_json(
        by_alias=True, exclude_unset=True
    )


class CredentialCache:
    """Valid credentials by hash, each kept at most `ttl_s` seconds (0 keeps none)."""

    def __init__(self, ttl_s: float, timer: Callable[[], float] = time.monotonic) -> None:
        ttl = min(max(ttl_s, 0.0), MAX_CACHE_S)
        self._entries: TTLCache[str, AccessToken] | None = (
            TTLCache(maxsize=CACHE_SIZE, ttl=ttl, timer=timer) if ttl > 0 else None
        )

    def get(self, token: str) -> AccessToken | None:
        """The credential's cached grant while it is fresh and unexpired, else None."""
        if self._entries is None:
            return None
        found = self._entries.get(_key(token))
        if found is not None and found.expires_at is not None and found.expires_at < time.time():
            return None
        return found

    def put(self, token: str, grant: AccessToken) -> None:
        if self._entries is not None:
            self._entries[_key(token)] = grant


def _key(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
