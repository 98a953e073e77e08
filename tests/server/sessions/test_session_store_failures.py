"""A session store that cannot write (a full disk, a read-only sessions.db) costs the session's
memory, never the answer: searches and gets answer with a warning; session_cite says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.sessions.store import MIGRATIONS
from tests.conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio


async def test_a_session_store_that_cannot_write_degrades_to_warnings(data_dir: Path) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    mcp, host = build_server(Settings(data_dir=data_dir))
    try:
        async with Client(mcp) as client:
            first = await client.call_tool("knowledge_search", {"query": "sourdough", "session_id": "s1"})
            assert not first.is_error and not first.structured_content.get("warnings")
            sessions = await host.pool.open(host.sessions.path("local"), MIGRATIONS)
            await sessions.write("PRAGMA query_only = ON")  # every write now fails, as on a full disk

            found = await client.call_tool("knowledge_search", {"query": "bread flour", "session_id": "s1"})
            assert not found.is_error, found.content[0].text
            content: dict[str, Any] = found.structured_content
            assert content["results"]
            assert any(
                "session could not be saved" in w and "not marked seen" in w for w in content["warnings"]
            )

            uri = content["results"][0]["uri"]
            read = await client.call_tool("knowledge_get", {"uri": uri, "session_id": "s1"})
            assert not read.is_error, read.content[0].text
            assert any("not marked viewed" in w for w in read.structured_content["warnings"])

            cite = await client.call_tool("session_cite", {"uris": [uri], "session_id": "s1"})
            assert cite.is_error and "session could not be saved" in cite.content[0].text

            info = await client.call_tool("session_info", {"session_id": "s1"})
            assert not info.is_error and info.structured_content["seen"]  # what was saved before
            # The failed search left the seen list as it was (it is not copied for a search: the
            # new URIs move into it only once the write succeeded).
            first_uris = [r["uri"] for r in first.structured_content["results"]]
            assert info.structured_content["seen"] == first_uris
            assert set(r["uri"] for r in content["results"]) - set(first_uris)
    finally:
        await host.pool.close()
