"""Two workers behind one port reading their items from PostgreSQL (a real `serve --transport
http --workers 2 --database-url … --item-store postgresql` subprocess, real MCP clients).

alice's and bob's items of every source (tests/server/isolation_world.py, plus a folder of
notes each) are imported into the database; each response names the worker that answered
(`X-Knowledge-Worker`) and the clients open a new connection per request, so both workers
answer (the helpers are tests/server/shared/test_two_workers.py's, whose server reads SQLite).
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from pydantic import SecretStr

from knowledge_mcp.server.auth.tokens import mint_token
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.storage.db import database_path
from tests.conftest import FIXTURES, ROOT, import_into_store
from tests.postgres import fresh_database
from tests.server.isolation_world import MARKERS, SOURCES, write_user_files
from tests.server.shared.test_two_workers import Answered, Workers, call, client, healthy, uris
from tests.server.transports.test_http_e2e import free_port, serve_command, stop

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REFUSED_CALLS = 12
"""Calls past the limit: all on one worker by chance is 1 in 2**(limit + 12)."""
SEARCH_LIMIT = 4  # characters_search calls a minute per user
LIMITED = "characters_search"
NOTES = {"alice": FIXTURES / "notes" / "recipes", "bob": FIXTURES / "notes" / "work"}


async def populate(url: str, data_dir: Path, files: Path) -> None:
    for user in ("alice", "bob"):
        folders = write_user_files(files, user)
        for source in SOURCES:
            assert (
                await import_into_store("postgresql", url, data_dir, source, folders[source], user=user)
            ).added
        assert (await import_into_store("postgresql", url, data_dir, "notes", NOTES[user], user=user)).added


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory, pg_server: str) -> Iterator[Workers]:
    folder = tmp_path_factory.mktemp("pg-workers")
    data_dir = folder / "data"
    with fresh_database(pg_server) as url:
        anyio.run(populate, url, data_dir, folder / "files")
        secret = uuid.uuid4().hex
        env = {
            "KNOWLEDGE_MCP_JWT_SECRET": secret,
            "KNOWLEDGE_MCP_RATE_LIMITS": json.dumps({LIMITED: SEARCH_LIMIT}),
            "KNOWLEDGE_MCP_EMBED_IN_BACKGROUND": "false",
        }
        port = free_port()
        log = folder / "server.log"
        flags = ("--port", str(port), "--workers", "2", "--database-url", url, "--item-store", "postgresql")
        with log.open("wb") as sink:
            process = subprocess.Popen(
                serve_command(data_dir, *flags),
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env={**os.environ, **env},
            )
        try:
            healthy(process, f"http://127.0.0.1:{port}/healthz", log)
            settings = Settings(jwt_secret=SecretStr(secret))
            tokens = {user: mint_token(settings, user, 3600) for user in ("alice", "bob", "carol")}
            yield Workers(f"http://127.0.0.1:{port}/mcp", tokens)
            text = log.read_text(errors="replace")
            assert secret not in text and "postgresql://" not in text
            assert not any(m in text for user in MARKERS for m in MARKERS[user].values())
        finally:
            stop(process)
    made = [database_path(data_dir, user, s) for user in ("alice", "bob") for s in SOURCES]
    assert not [p for p in made if p.exists()], "the items went to PostgreSQL, not SQLite"


async def test_alice_never_sees_bobs_items_on_either_worker(workers: Workers) -> None:
    answered = Answered()
    async with client(workers, "bob", "legacy", answered) as bob:
        bobs = {s: uris(await call(bob, f"{s}_search", query=MARKERS["bob"][s]))[0] for s in SOURCES}
    async with client(workers, "alice", "legacy", answered) as alice:
        for _ in range(2):  # each call a new connection: both workers answer over the rounds
            for source in SOURCES:
                mine = await call(alice, f"{source}_search", query=MARKERS["alice"][source])
                assert len(uris(mine)) == 1, source
                theirs = await call(alice, f"{source}_search", query=MARKERS["bob"][source])
                assert theirs["results"] == [] and theirs["count"] == 0, source
            everyone = " OR ".join(MARKERS["bob"].values())
            assert (await call(alice, "knowledge_search", query=everyone, limit=50))["results"] == []
            for uri in bobs.values():
                refused = await alice.call_tool("knowledge_get", {"uri": uri})
                assert refused.is_error, uri
                assert not any(m in refused.content[0].text for m in MARKERS["bob"].values())  # type: ignore[union-attr]
    assert len(set(answered.pids)) == 2


async def test_a_session_started_on_one_worker_hides_its_seen_items_on_the_other(workers: Workers) -> None:
    answered = Answered()
    async with client(workers, "alice", "legacy", answered) as alice:  # 2025-11-25: Mcp-Session-Id
        for _ in range(30):  # until the hiding search lands on the other worker
            await call(alice, "session_reset")
            shown = uris(await call(alice, "knowledge_search", query="cook", limit=2))
            first_worker = answered.pids[-1]
            again = await call(alice, "knowledge_search", query="cook", limit=2, seen="hide")
            if answered.pids[-1] != first_worker:
                break
        else:
            pytest.fail(f"every search went to worker {first_worker}")
        info = await call(alice, "session_info")
    assert len(shown) == 2 and uris(again)
    assert not set(shown) & set(uris(again)), "the other worker did not hide what this session saw"
    assert set(shown) <= set(info["seen"])


async def test_a_rate_limit_holds_across_both_workers(workers: Workers) -> None:
    answered = Answered()
    async with client(workers, "carol", "legacy", answered) as carol:  # her budget all unspent
        # enough refused calls that both workers answer some (each call may land on either)
        calls = SEARCH_LIMIT + REFUSED_CALLS
        results = [await carol.call_tool(LIMITED, {"query": "knight"}) for _ in range(calls)]
        other_tool = await carol.call_tool("knowledge_search", {"query": "knight"})
    assert [r.is_error for r in results] == [False] * SEARCH_LIMIT + [True] * REFUSED_CALLS
    assert f"rate limit reached for {LIMITED}" in results[-1].content[0].text  # type: ignore[union-attr]
    assert not other_tool.is_error
    assert len(set(answered.pids[-(calls + 1) :])) == 2  # the calls were spread over both
