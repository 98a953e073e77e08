"""A PostgreSQL server that cannot be reached degrades the shared state, never the answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from pydantic import SecretStr

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.postgres.keys import PgKeyStore
from knowledge_mcp.server.postgres.state import SharedState
from tests.conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio

DOWN = "postgresql://knowledge:s3cret@127.0.0.1:9/knowledge?connect_timeout=1"


@pytest.fixture(autouse=True)
def quick_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """A first connection is waited for 1 s here (10 s in the server)."""
    monkeypatch.setattr("knowledge_mcp.server.postgres.state.OPEN_TIMEOUT_S", 1.0)


async def test_searches_answer_with_a_warning_and_a_session_change_is_a_tool_error(data_dir: Path) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes" / "recipes")
    settings = Settings(data_dir=data_dir, database_url=SecretStr(DOWN), rate_limit_per_minute=5)
    mcp, host = build_server(settings)
    try:
        async with Client(mcp) as client:
            found = await client.call_tool("knowledge_search", {"query": "cook", "session_id": "s1"})
            cited = await client.call_tool("session_cite", {"uris": ["notes://a"], "session_id": "s1"})
            again = [await client.call_tool("notes_search", {"query": "cook"}) for _ in range(7)]
    finally:
        await host.close()
    assert not found.is_error and found.structured_content is not None
    assert found.structured_content["results"]
    assert any("could not be saved" in w for w in found.structured_content["warnings"])
    text = " ".join(getattr(c, "text", "") for c in cited.content)
    assert cited.is_error and "database_url" in text and "s3cret" not in text
    assert not any(r.is_error for r in again)  # limits let calls through while the store is down


async def test_a_key_is_not_verified_while_postgresql_is_down() -> None:
    state = SharedState(DOWN, pool_size=1)
    try:
        assert await PgKeyStore(state).grant_for("km_anything") is None
    finally:
        await state.close()
