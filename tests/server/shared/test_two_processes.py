"""Two processes changing one session in PostgreSQL at once lose nothing (each change is one
atomic statement; there is no cache to go stale)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge_mcp.server.postgres.sessions import PgSessionStore
from knowledge_mcp.server.postgres.state import SharedState

pytestmark = pytest.mark.anyio

CHANGES = 100  # per process, all at once

WORKER = """
import asyncio, sys, time
from pathlib import Path
from knowledge_mcp.server.postgres.sessions import PgSessionStore
from knowledge_mcp.server.postgres.state import SharedState

async def main(url, name, go):
    state = SharedState(url, pool_size=8)
    store = PgSessionStore(state)
    session = await store.open("alice", "busy")
    while not Path(go).exists():
        time.sleep(0.01)
    await asyncio.gather(*(
        change
        for n in range(CHANGES)
        for change in (
            session.record_results(f"{name} {n}", [f"notes://{name}-{n}"]),
            session.mark_viewed(f"media://{name}-{n}"),
        )
    ))
    await state.close()

CHANGES = int(sys.argv[4])
asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
"""


async def test_two_processes_recording_results_on_one_session_lose_nothing(
    pg_url: str, tmp_path: Path
) -> None:
    state = SharedState(pg_url, pool_size=1)
    try:
        await state.db()  # migrated once, before the workers start
        go = tmp_path / "go"
        processes = [
            subprocess.Popen([sys.executable, "-c", WORKER, pg_url, name, str(go), str(CHANGES)])
            for name in ("a", "b")
        ]
        time.sleep(1.0)  # both connected and waiting
        go.touch()
        assert [p.wait(timeout=120) for p in processes] == [0, 0]
        session = await PgSessionStore(state).open("alice", "busy")
        expected = {f"notes://{name}-{n}" for name in "ab" for n in range(CHANGES)}
        assert set(session.seen) == expected and len(session.seen) == 2 * CHANGES
        assert set(session.viewed) == {u.replace("notes", "media") for u in expected}
        assert len(session.recent_queries) == 50
        events = await (await PgSessionStore(state).timeline("alice")).events("busy")
        assert len(events) == 4 * CHANGES  # a search and a get event per change
    finally:
        await state.close()
