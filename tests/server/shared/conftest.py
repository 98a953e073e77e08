"""Session stores of both backends, for contract tests that must hold for each."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.server.context import DatabasePool
from knowledge_mcp.server.postgres.sessions import PgSessionStore
from knowledge_mcp.server.postgres.state import SharedState
from knowledge_mcp.server.sessions.store import SessionStore

MakeStore = Callable[..., Any]
"""(ttl=, now=) -> a new session store over the same storage: a new process, as far as the
store can tell (SQLite: a new cache over the same files; PostgreSQL: a new pool)."""


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_store(
    backend: str, request: pytest.FixtureRequest, data_dir: Path
) -> AsyncIterator[MakeStore]:
    pool = DatabasePool()
    states: list[SharedState] = []
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None

    def make(*, ttl: timedelta = timedelta(minutes=60), **kw: Any) -> Any:
        if url is None:
            return SessionStore(data_dir, pool, ttl=ttl, **kw)
        states.append(SharedState(url, pool_size=4))
        return PgSessionStore(states[-1], ttl=ttl, **kw)

    yield make
    for state in states:
        await state.close()
    await pool.close()
