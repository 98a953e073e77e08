"""A migrated PostgreSQL item store on a fresh database of the test server (tests/postgres.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, open_pg
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[PgDatabase]:
    db = await open_pg(pg_url)
    await migrate(db, COMPONENT, MIGRATIONS)
    try:
        yield db
    finally:
        await db.close()
