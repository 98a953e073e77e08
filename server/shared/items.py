"""The PostgreSQL item store of a serving process (`item_store = "postgresql"`).

One pool for the process, opened and migrated on the first tool call that reads items, closed
at shutdown. Each call gets a `PgStore`: the store seen as the authenticated user's items of one
source (psycopg is imported only here, and only with that setting).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any


class ServedItemStore:
    """Opens the store's pool once and hands out per-user, per-source views of it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._pg: Any = None
        self._lock = asyncio.Lock()

    async def items(self, user_id: str, source: str, path: Path) -> Any:
        """`user_id`'s items of `source` (a `PgStore`); `path`: their SQLite file's place."""
        from knowledge_mcp.sources.storage.postgres.store import PgStore

        return PgStore(await self._open(), user_id, source, path)

    async def _open(self) -> Any:
        if self._pg is not None:
            return self._pg
        async with self._lock:
            if self._pg is None:
                from knowledge_mcp.sources.storage.postgres.migrations import migrate
                from knowledge_mcp.sources.storage.postgres.pool import open_pg
                from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS

                pg = await open_pg(self.url)
                try:
                    await migrate(pg, COMPONENT, MIGRATIONS)
                except BaseException:
                    await pg.close()
                    raise
                self._pg = pg
        return self._pg

    async def close(self) -> None:
        if self._pg is not None:
            await self._pg.close()
            self._pg = None
