"""Over stdio, a session keeps every search: the very next call down-ranks what the last one
returned, and a burst of calls ended by the client closing stdin leaves every search in the
session's timeline (a change to when the session's write happens must keep both)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import ROOT, serve_args

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BURST = 12


async def search(client: Client, query: str, **arguments: Any) -> dict[str, Any]:
    found = await client.call_tool("knowledge_search", {"query": query, **arguments})
    assert not found.is_error, found.content
    assert found.structured_content is not None
    return found.structured_content


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
