"""Credentials that end, in process: the verifier asks the key store again once its short cache
lapses, never serves an expired token from the cache, and scopes split on U+0020 only."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from mcp.server.auth.provider import AccessToken

from knowledge_mcp.server.auth.credentials import MAX_CACHE_S, CredentialCache
from knowledge_mcp.server.auth.keys import SqliteKeyStore
from knowledge_mcp.server.auth.scopes import claim_scopes, stored_scopes
from knowledge_mcp.server.auth.tokens import KnowledgeTokenVerifier
from knowledge_mcp.server.context import DatabasePool


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def grant(expires_at: int | None = None) -> AccessToken:
    return AccessToken(token="t", client_id="alice", scopes=[], expires_at=expires_at, subject="alice")


def test_a_cached_credential_is_served_only_until_its_window_ends() -> None:
    clock = Clock()
    cache = CredentialCache(2.0, timer=clock)
    cache.put("km_abc", grant())
    clock.now += 1.9
    assert cache.get("km_abc") is not None
    clock.now += 0.2
    assert cache.get("km_abc") is None


def test_the_window_is_never_longer_than_five_seconds() -> None:
    clock = Clock()
    cache = CredentialCache(3600.0, timer=clock)
    cache.put("km_abc", grant())
    clock.now += MAX_CACHE_S + 0.01
    assert cache.get("km_abc") is None


def test_a_window_of_zero_keeps_nothing() -> None:
    cache = CredentialCache(0.0)
    cache.put("km_abc", grant())
    assert cache.get("km_abc") is None


def test_a_cached_token_whose_exp_has_passed_is_not_served() -> None:
    cache = CredentialCache(5.0)
    cache.put("expired", grant(int(time.time()) - 1))
    cache.put("valid", grant(int(time.time()) + 60))
    assert cache.get("expired") is None and cache.get("valid") is not None


@pytest.mark.anyio
async def test_a_key_revoked_in_the_store_fails_its_next_verification(tmp_path: Path) -> None:
    store = await SqliteKeyStore.open(tmp_path)
    pool = DatabasePool()
    try:
        key = await store.create("alice", ["write"])
        verifier = KnowledgeTokenVerifier(None, SqliteKeyStore(tmp_path, pool.open), cache_s=0)
        before = await verifier.verify_token(key)
        assert before is not None and before.subject == "alice" and "write" in before.scopes
        assert await store.revoke(key[:11])
        assert await verifier.verify_token(key) is None
    finally:
        await store.close()
        await pool.close()


@pytest.mark.parametrize(
    ("scope", "scopes"),
    [
        ("read write", ["read", "write"]),
        ("  read   write ", ["read", "write"]),
        ("read\u00a0write", ["read\u00a0write"]),
        ("read\u2003write", ["read\u2003write"]),
        ("read\twrite", ["read\twrite"]),
        ("read\nwrite", ["read\nwrite"]),
    ],
)
def test_scopes_are_separated_by_a_plain_space_only(scope: str, scopes: list[str]) -> None:
    assert claim_scopes({"scope": scope}) == scopes
    assert stored_scopes(scope) == scopes
