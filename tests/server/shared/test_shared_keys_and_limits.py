"""API keys and rate limits in PostgreSQL: what one process writes, every other one honours."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_mcp.server.auth.limits import RateLimiter
from knowledge_mcp.server.postgres.keys import PgKeyStore
from knowledge_mcp.server.postgres.limits import PgBuckets
from knowledge_mcp.server.postgres.state import SharedState

pytestmark = pytest.mark.anyio


def cli(*args: str, url: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "knowledge_mcp",
        *args,
        "--data-dir",
        str(data_dir),
        "--database-url",
        url,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


async def test_keys_made_by_the_cli_with_a_database_url_live_in_postgresql(
    pg_url: str, data_dir: Path
) -> None:
    made = cli("keys", "create", "--user", "Alice", "--scope", "write", url=pg_url, data_dir=data_dir)
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert not (data_dir / "keys.db").exists()  # nothing in the data dir
    state = SharedState(pg_url, pool_size=1)
    try:
        store = PgKeyStore(state)
        grant = await store.grant_for(key)
        assert grant is not None and (grant.user_id, grant.scopes) == ("Alice", ("write",))
        assert await store.grant_for(key + "x") is None
        listed = cli("keys", "list", "--user", "Alice", url=pg_url, data_dir=data_dir)
        assert (
            listed.stdout.startswith(key[:11]) and "\tAlice\t" in listed.stdout and key not in listed.stdout
        )
        assert cli("keys", "list", "--user", "alice", url=pg_url, data_dir=data_dir).stdout == ""
        revoked = cli("keys", "revoke", key[:11], url=pg_url, data_dir=data_dir)
        assert revoked.returncode == 0, revoked.stderr
        assert await store.grant_for(key) is None and await store.active_count() == 0
        missing = cli("keys", "revoke", "km_nothere", url=pg_url, data_dir=data_dir)
        assert missing.returncode == 1 and "no key with prefix km_nothere" in missing.stderr
    finally:
        await state.close()


async def test_a_limit_holds_across_two_workers_sharing_the_buckets(pg_url: str) -> None:
    states = [SharedState(pg_url, pool_size=2) for _ in range(2)]
    try:
        workers = [RateLimiter(3, {"notes_get": 0}, shared=PgBuckets(state)) for state in states]
        answers = [await workers[n % 2].take("alice", "knowledge_search") for n in range(4)]
        assert answers[:3] == [None, None, None]
        wait = answers[3]
        assert wait is not None and 0 < wait <= 20  # 3 a minute: the next token within 20 s
        assert await workers[0].take("bob", "knowledge_search") is None  # another user's bucket
        assert await workers[1].take("alice", "notes_search") is None  # another tool's bucket
        assert all([await workers[0].take("alice", "notes_get") is None for _ in range(10)])  # no limit
    finally:
        for state in states:
            await state.close()
