"""Over stdio a search's session write waits until its answer is written (`sessions/pending.py`):
the next call still sees the search, a burst of calls leaves every search in the timeline, a
clean shutdown loses none, and a write that fails says so in the session's next search."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from loguru import logger
from mcp import Client, StdioServerParameters

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.sessions.store import MIGRATIONS
from tests.conftest import FIXTURES, ROOT, import_into, serve_args

pytestmark = pytest.mark.anyio

BURST = 12


async def search(client: Client, query: str, **arguments: Any) -> dict[str, Any]:
    found = await client.call_tool("knowledge_search", {"query": query, **arguments})
    assert not found.is_error, found.content
    assert found.structured_content is not None
    return found.structured_content


@pytest.mark.slow
async def test_over_stdio_the_next_call_sees_the_search_and_shutdown_keeps_every_write(
    cli_imported_notes: Path, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(cli_imported_notes, data_dir)
    params = StdioServerParameters(command=sys.executable, args=serve_args(data_dir), cwd=ROOT)
    with anyio.fail_after(90):
        async with Client(params) as client:
            first = await search(client, "sourdough bread", session_id="s1", seen="show")
            shown = [r["uri"] for r in first["results"]]
            assert shown
            again = await search(client, "sourdough bread", session_id="s1", seen="downrank")
            assert again["seen_applied"] == {"mode": "downrank", "count": len(shown), "uris": shown}
            for n in range(BURST):
                await search(client, f"recipe {n}", session_id="s1", seen="show")
    with sqlite3.connect(data_dir / "users" / "local" / "sessions.db") as db:
        rows = db.execute(
            "SELECT payload FROM session_events WHERE session_id = 's1' AND kind = 'search' ORDER BY id"
        ).fetchall()
    queries = [json.loads(payload)["query"] for (payload,) in rows]
    assert queries == ["sourdough bread", "sourdough bread", *(f"recipe {n}" for n in range(BURST))]


async def test_a_held_write_that_fails_is_logged_without_content_and_warned_on_the_next_search(
    data_dir: Path,
) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    mcp, host = build_server(Settings(data_dir=data_dir))
    lines: list[str] = []
    sink = logger.add(lines.append, level="WARNING", format="{message}")
    try:
        async with Client(mcp) as client, host.sessions.pending.held():
            first = await search(client, "sourdough", session_id="s1")
            assert not first.get("warnings")
            await client.call_tool("session_info", {"session_id": "s1"})  # settles its write
            sessions = await host.pool.open(host.sessions.path("local"), MIGRATIONS)
            await sessions.write("PRAGMA query_only = ON")  # the held write of the next search fails
            second = await search(client, "bread flour secret", session_id="s1")
            assert not second.get("warnings")  # its write is not done yet: the answer did not wait
            third = await search(client, "starter", session_id="s1")
            lost = [w for w in third.get("warnings", []) if "previous search's results are not marked" in w]
            assert lost and "session could not be saved" in lost[0]
            await sessions.write("PRAGMA query_only = OFF")
            fourth = await search(client, "starter", session_id="s1")
            assert not any("not marked seen" in w for w in fourth.get("warnings", []))  # said once
            info = await client.call_tool("session_info", {"session_id": "s1"})
            recent = info.structured_content["recent_queries"]
            assert "bread flour secret" not in recent and "sourdough" in recent
    finally:
        logger.remove(sink)
        await host.pool.close()
    failed = [line for line in lines if "held write failed" in line]
    assert failed and not any("secret" in line or "flour" in line for line in lines)
