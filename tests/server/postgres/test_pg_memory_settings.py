"""The server's settings reach the PostgreSQL store's copies of small sources in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.server.backend import open_backend
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.storage.postgres.store import memory

pytestmark = pytest.mark.anyio


async def test_the_servers_settings_bound_its_memory_copies(pg_url: str, tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        item_store="postgresql",
        database_url=pg_url,
        memory_index_max_chunks=5,
        memory_index_total_mb=1.5,
    )
    backend = open_backend(settings)
    try:
        store = await backend.items.read("alice", "notes", tmp_path)
        copies = store.pg.caches[memory.CACHE]
        assert (copies.max_chunks, copies.total_size) == (5, 1_500_000)
    finally:
        await backend.close()
