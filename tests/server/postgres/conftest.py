"""Two real servers over the same files: one reading the SQLite files, one the PostgreSQL item store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.cli.commands import run_import
from knowledge_mcp.server.config import Settings

from ...conftest import FIXTURES, import_into

Importing = Callable[..., Awaitable[None]]


@pytest.fixture
async def pg_servers(data_dir: Path, pg_url: str) -> AsyncIterator[Any]:
    """`make(item_store, **settings)`: a real in-memory server over `data_dir` (SQLite) or the
    test database (PostgreSQL); closed after the test."""
    hosts = []

    def make(item_store: str, **settings: Any) -> Client:
        url = pg_url if item_store == "postgresql" else None
        mcp, host = build_server(
            Settings(data_dir=data_dir, item_store=item_store, database_url=url, **settings)
        )
        hosts.append(host)
        return Client(mcp)

    yield make
    for host in hosts:
        await host.close()


@pytest.fixture
def import_both(data_dir: Path, pg_url: str) -> Importing:
    """Import a source's fixtures (or `paths`) for `user` into the SQLite files and into PostgreSQL,
    through the runners `knowledge-mcp import` uses for each store."""

    async def both(source: str, *paths: Path, user: str = "local") -> None:
        folders = list(paths) or [FIXTURES / source]
        await import_into(data_dir, source, *folders, user=user)
        settings = Settings(data_dir=data_dir, user=user, item_store="postgresql", database_url=pg_url)
        summary = await run_import(settings, source, folders, False)
        assert summary.files_failed == 0, summary.failures

    return both
