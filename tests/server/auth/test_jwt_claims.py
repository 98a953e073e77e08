"""A correctly signed JWT is still refused when its time claims are not JSON numbers or it claims
to live longer than `max_token_lifetime_s` (a leaked token must stop working)."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest

from knowledge_mcp.server.auth.tokens import AuthConfigError, JwtVerifier, mint_token
from knowledge_mcp.server.config import Settings

SECRET = "test-secret-that-is-long-enough-for-hs256"
NOW = int(time.time())
SETTINGS = Settings(jwt_secret=SECRET)


def verifier(**settings: Any) -> JwtVerifier:
    built = JwtVerifier.from_settings(Settings(jwt_secret=SECRET, **settings))
    assert built is not None
    return built


def signed(**claims: Any) -> str:
    return jwt.encode({"sub": "alice", **claims}, SECRET, algorithm="HS256")


@pytest.mark.parametrize(
    "claims",
    [
        pytest.param({"exp": str(NOW + 300)}, id="exp-string"),
        pytest.param({"exp": "9999999999"}, id="exp-string-far"),
        pytest.param({"exp": 1e30}, id="exp-absurd"),
        pytest.param({"exp": NOW + 10 * 86_400}, id="exp-beyond-max-lifetime"),
        pytest.param({"exp": True}, id="exp-boolean"),
        pytest.param({"exp": NOW + 300, "nbf": str(NOW - 10)}, id="nbf-string"),
        pytest.param({"exp": NOW + 300, "iat": "now"}, id="iat-string"),
        pytest.param({"exp": NOW + 300, "iat": [NOW]}, id="iat-list"),
    ],
)
def test_a_signed_token_with_bad_time_claims_is_refused(claims: dict[str, Any]) -> None:
    assert verifier().verify(signed(**claims)) is None


@pytest.mark.parametrize(
    "claims",
    [
        # an hour: NOW is read at collection, and a loaded suite reaches this test minutes later
        {"exp": NOW + 3_600},
        {"exp": NOW + 3_600.5, "iat": NOW, "nbf": NOW - 5},
        {"exp": NOW + 86_000},
    ],
)
def test_a_token_with_numeric_claims_within_the_lifetime_is_accepted(claims: dict[str, Any]) -> None:
    verified = verifier().verify(signed(**claims))
    assert verified is not None and verified["sub"] == "alice"


def test_the_lifetime_cap_is_a_setting() -> None:
    week = signed(exp=NOW + 7 * 86_400)
    assert verifier().verify(week) is None
    assert verifier(max_token_lifetime_s=8 * 86_400).verify(week) is not None


def test_minting_refuses_a_ttl_beyond_the_lifetime_cap() -> None:
    with pytest.raises(AuthConfigError, match="max_token_lifetime_s"):
        mint_token(SETTINGS, "alice", 2 * 86_400)
    assert verifier().verify(mint_token(SETTINGS, "alice", 86_400)) is not None
