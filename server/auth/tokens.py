"""HTTP authentication: JWT bearer tokens and API keys, verified for the SDK's auth middleware.

`Authorization: Bearer <JWT>` is checked with the algorithms pinned in settings (so `alg: none`
and HS/RS confusion fail), `exp` required and enforced, `nbf`, `iss` and `aud` when present or
configured; `exp`, `nbf` and `iat` must be JSON numbers, and `exp` at most
`max_token_lifetime_s` ahead; its `sub` is the user id. `Authorization: Bearer km_…` or
`X-API-Key: km_…` is an API key looked up by hash. The user id becomes `AccessToken.subject`;
`Services.context` reads it from there and nowhere else.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from loguru import logger
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from starlette.types import ASGIApp, Receive, Scope, Send

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.storage.db import validate_user_id

from ..config import Settings
from .credentials import CredentialCache
from .keys import KeyStore, looks_like_key
from .scopes import claim_scopes, scope_text

API_KEY_HEADER = b"x-api-key"


class AuthConfigError(KnowledgeError):
    pass


class JwtVerifier:
    """Checks a JWT's signature with the key its (pinned) algorithm family calls for."""

    def __init__(
        self,
        algorithms: Sequence[str],
        secret: str | None,
        public_key: Any | None,
        issuer: str | None = None,
        audience: str | None = None,
        max_lifetime_s: int = 86_400,
    ) -> None:
        self.algorithms = tuple(algorithms)
        self.secret = secret
        self.public_key = public_key
        self.issuer = issuer
        self.audience = audience
        self.max_lifetime_s = max_lifetime_s

    @classmethod
    def from_settings(cls, settings: Settings) -> JwtVerifier | None:
        secret = settings.jwt_secret.get_secret_value() if settings.jwt_secret is not None else None
        public_key = _load_public_key(settings.jwt_public_key_file) if settings.jwt_public_key_file else None
        if secret is None and public_key is None:
            return None
        algorithms = settings.allowed_jwt_algorithms()
        for alg in algorithms:
            if alg.startswith("HS") and secret is None:
                raise AuthConfigError(f"jwt_algorithms includes {alg} but no jwt_secret is set")
            if not alg.startswith("HS") and public_key is None:
                raise AuthConfigError(f"jwt_algorithms includes {alg} but no jwt_public_key_file is set")
        return cls(
            algorithms,
            secret,
            public_key,
            settings.jwt_issuer,
            settings.jwt_audience,
            settings.max_token_lifetime_s,
        )

    def verify(self, token: str) -> dict[str, Any] | None:
        """The token's claims when it is valid for this server, else None."""
        try:
            alg = jwt.get_unverified_header(token).get("alg")
        except jwt.PyJWTError:
            return None
        if not isinstance(alg, str) or alg not in self.algorithms:
            return None
        key = self.secret if alg.startswith("HS") else self.public_key
        if key is None:
            return None
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[alg],
                issuer=self.issuer,
                audience=self.audience,
                options={"require": ["exp", "sub"]},
            )
        except (jwt.PyJWTError, ValueError, TypeError, OverflowError) as exc:
            logger.debug("jwt rejected: {}", type(exc).__name__)
            return None
        problem = _time_claims_problem(claims, self.max_lifetime_s)
        if problem is not None:
            logger.debug("jwt rejected: {}", problem)
            return None
        return claims


TIME_CLAIMS = ("exp", "nbf", "iat")


def _time_claims_problem(claims: dict[str, Any], max_lifetime_s: int) -> str | None:
    """Why the token's time claims are unacceptable, or None. PyJWT reads `"exp": "9999999999"`
    as a number; RFC 7519 says NumericDate is a JSON number, and a token that lives for ever
    (or for 1e30 seconds) is a leaked credential that never stops working."""
    for name in TIME_CLAIMS:
        if name not in claims:
            continue
        value = claims[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{name} is not a number"
        if not math.isfinite(value):
            return f"{name} is not finite"
    if claims["exp"] - time.time() > max_lifetime_s:
        return "exp is further ahead than max_token_lifetime_s"
    return None


def _load_public_key(path: Path) -> Any:
    try:
        return load_pem_public_key(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise AuthConfigError(f"jwt_public_key_file {path}: not a readable PEM public key ({exc})") from exc


class KnowledgeTokenVerifier:
    """The SDK's `TokenVerifier`: a JWT or an API key in, the user's AccessToken out.

    Asked on every HTTP request and every WebSocket call, so a revoked key or an expired token
    ends there. A credential found valid is trusted for `cache_s` seconds (at most 5) before its
    key is looked up again; a token's `exp` is checked on every call, cached or not."""

    def __init__(self, jwt_verifier: JwtVerifier | None, keys: KeyStore, cache_s: float = 0.0) -> None:
        self.keys = keys
        """The backend's key store (keys.db in the data folder, or PostgreSQL's)."""
        self.jwt = jwt_verifier
        self.cache = CredentialCache(cache_s)

    async def verify_token(self, token: str) -> AccessToken | None:
        found = self.cache.get(token)
        if found is None:
            found = await self._verify(token)
            if found is not None:
                self.cache.put(token, found)
        return found

    async def still_valid(self, granted: AccessToken) -> bool:
        """Whether a credential verified earlier (a WebSocket's, at its handshake) still verifies
        as the same user: its key not revoked, its token not expired."""
        again = await self.verify_token(granted.token)
        return again is not None and again.subject == granted.subject

    async def _verify(self, token: str) -> AccessToken | None:
        if looks_like_key(token):
            return await self._verify_key(token)
        if self.jwt is None:
            return None
        claims = self.jwt.verify(token)
        if claims is None:
            return None
        return _access_token(token, str(claims["sub"]), int(claims["exp"]), "jwt", claim_scopes(claims))

    async def _verify_key(self, key: str) -> AccessToken | None:
        grant = await self.keys.grant_for(key)
        return (
            None if grant is None else _access_token(key, grant.user_id, None, "api_key", list(grant.scopes))
        )


def _access_token(
    token: str, user: str, expires_at: int | None, via: str, scopes: list[str]
) -> AccessToken | None:
    try:
        user = validate_user_id(user)  # kept as the credential says it: `Bob` and `bob` are two users
    except KnowledgeError:
        logger.debug("credential names an invalid user id; rejected")
        return None
    if expires_at is not None and expires_at < int(time.time()):
        return None
    return AccessToken(
        token=token, client_id=user, scopes=scopes, expires_at=expires_at, subject=user, claims={"via": via}
    )


def authenticated_user(scope: Any) -> str | None:
    """The user id the auth middleware verified for this request's ASGI scope, if any."""
    user = scope.get("user") if isinstance(scope, dict) else None
    if isinstance(user, AuthenticatedUser) and user.access_token.subject:
        return user.access_token.subject
    return None


def auth_settings(settings: Settings) -> AuthSettings:
    """Resource-server settings: 401s carry WWW-Authenticate with the RFC 9728 metadata URL,
    built on `public_url` behind a proxy (else the bind address)."""
    base = settings.base_url()
    issuer = settings.jwt_issuer if (settings.jwt_issuer or "").startswith(("http://", "https://")) else base
    return AuthSettings(
        issuer_url=issuer,  # type: ignore[arg-type]
        resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
        validate_token_resource=False,  # the verifier checks `aud` itself
    )


class ApiKeyHeader:
    """ASGI middleware: `X-API-Key: km_…` counts as `Authorization: Bearer km_…` (when no
    Authorization header is present), so the SDK's bearer middleware verifies it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = list(scope.get("headers", []))
            names = {bytes(k).lower() for k, _ in headers}
            key = next((bytes(v) for k, v in headers if bytes(k).lower() == API_KEY_HEADER), None)
            if key is not None and b"authorization" not in names and key.startswith(b"km_"):
                scope["headers"] = [*headers, (b"authorization", b"Bearer " + key)]
        await self.app(scope, receive, send)


def mint_token(settings: Settings, user: str, ttl_s: int, scopes: Sequence[str] = ()) -> str:
    """An HS256 JWT for `user` signed with the configured `jwt_secret` (with a `scope` claim
    when `scopes` are given: `write` lets it write notes)."""
    if settings.jwt_secret is None:
        raise AuthConfigError(
            "token: no jwt_secret configured (set KNOWLEDGE_MCP_JWT_SECRET or [auth] jwt_secret)"
        )
    if not 0 < ttl_s <= settings.max_token_lifetime_s:
        raise AuthConfigError(
            f"token: --ttl must be 1..{settings.max_token_lifetime_s} seconds (max_token_lifetime_s)"
        )
    now = int(time.time())
    claims: dict[str, Any] = {"sub": validate_user_id(user), "iat": now, "exp": now + ttl_s}
    if settings.jwt_issuer:
        claims["iss"] = settings.jwt_issuer
    if settings.jwt_audience:
        claims["aud"] = settings.jwt_audience
    if scopes:
        claims["scope"] = scope_text(scopes)
    return jwt.encode(claims, settings.jwt_secret.get_secret_value(), algorithm="HS256")
