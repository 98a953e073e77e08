"""The backend, chosen once: `open_backend(settings)` hands the server and the CLI their items,
sessions (and timelines), API keys, rate-limit buckets and watched folders (`protocols.Backend`).

- no `database_url`: everything in SQLite files under `data_dir` (`sqlite.SqliteBackend`);
- `database_url`: sessions, keys and buckets in PostgreSQL, shared by every worker
  (`postgres/backend.PostgresBackend`), and the items in the users' SQLite files, or with
  `item_store = "postgresql"` in the PostgreSQL item store.

Nothing else asks which backend it has: `Settings` validates the pair, this module reads it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING

from ..config import Settings
from ..context import DatabasePool
from .protocols import Backend, Items
from .sqlite import SqliteBackend, SqliteItems

if TYPE_CHECKING:  # the embedding worker (numpy) is the server's, never loaded by `knowledge-mcp import`
    from knowledge_mcp.sources.search.background import BackgroundIndexer

__all__ = ["Backend", "SqliteBackend", "has_active_keys", "open_backend", "opened"]


def open_backend(
    settings: Settings, *, background: BackgroundIndexer | None = None, connections: int | None = None
) -> Backend:
    """The backend `settings` name; nothing is opened until first used.

    `background`: the embedding worker told of every source read; `connections`: at most this
    many connections to PostgreSQL for sessions and keys (None: the server's default)."""
    pool = DatabasePool(memory_index_max_chunks=settings.memory_index_max_chunks, background=background)
    if settings.database_url is None:
        return SqliteBackend(settings, pool)
    from ..postgres.backend import PostgresBackend, postgres_items  # psycopg: only with database_url

    url = settings.database_url.get_secret_value()
    items: Items = (
        postgres_items(url, settings.data_dir, pool, settings)
        if settings.item_store == "postgresql"
        else SqliteItems(pool, settings.data_dir)
    )
    ttl = timedelta(minutes=settings.session_ttl_minutes)
    return PostgresBackend(url, pool, items, session_ttl=ttl, connections=connections)


@asynccontextmanager
async def opened(settings: Settings) -> AsyncIterator[Backend]:
    """The backend of one CLI command (one connection to PostgreSQL), closed after it."""
    backend = open_backend(settings, connections=1)
    try:
        yield backend
    finally:
        await backend.close()


async def has_active_keys(settings: Settings) -> bool:
    """Whether any unrevoked API key exists (keys.db is not created when there is none)."""
    async with opened(settings) as backend:
        return await backend.keys.active_count() > 0
