"""A migrated PostgreSQL item store on a fresh database of the test server (tests/postgres.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
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


def record_statements(monkeypatch: pytest.MonkeyPatch, keep: Callable[[str], str | None] = str) -> list[str]:
    """Every statement (or batch of statements: one round trip) sent to the server from now on,
    as `keep` gives it back (None: not recorded)."""
    sent: list[str] = []
    original = psycopg.AsyncCursor.execute

    async def execute(self: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        kept = keep(str(query))
        if kept is not None:
            sent.append(kept)
        return await original(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.AsyncCursor, "execute", execute)
    return sent


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement (or batch of statements: one round trip) sent to the server."""
    return record_statements(monkeypatch)
