"""A sessions.db written by a newer knowledge-mcp (after a downgrade) is not this server's to
change: searches still answer, without a session, and say why in one warning."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio


async def test_a_sessions_database_of_a_newer_version_leaves_searches_answering(
    client_factory: Callable[..., Any], data_dir: Path
) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    sessions = data_dir / "users" / "local" / "sessions.db"
    with sqlite3.connect(sessions) as conn:
        conn.execute("PRAGMA user_version = 99")
    async with client_factory() as client:
        first = await client.call_tool("knowledge_search", {"query": "levain"})
        again = await client.call_tool("knowledge_search", {"query": "levain"})
    for result in (first, again):
        assert not result.is_error, result.content[0].text
        found = result.structured_content
        assert found["count"] >= 1 and not found.get("session_applied")  # True with a session
    with sqlite3.connect(sessions) as conn:  # left as the newer version wrote it
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 99
