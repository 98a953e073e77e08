"""A migrated PostgreSQL item store on a fresh database of the test server (tests/postgres.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
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


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement (or batch of statements: one round trip) sent to the server."""
    sent: list[str] = []
    original = psycopg.AsyncCursor.execute

    async def execute(self: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return await original(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.AsyncCursor, "execute", execute)
    yield sent
