"""The shared state's database: one pool per process, opened (and migrated) on first use.

`SharedState(url)` is built with the server, synchronously; the pool opens in the event loop
that serves (a uvicorn worker's own), at the first call that needs it, and every component's
migrations run then, under the advisory lock, so workers starting together apply each once.

`as_user(user_id)` is a transaction on one connection whose `knowledge.user_id` setting is
the caller's: the row policies of the per-user tables (`schema.py`) admit only that user's
rows. The setting, the statements and COMMIT go out in one pipeline.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from psycopg.rows import dict_row

from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, check_url, open_pg, redacted

from .schema import COMPONENTS

SET_USER_SQL = "SELECT set_config('knowledge.user_id', %s, true)"
POOL_SIZE = 8


class SharedState:
    """The PostgreSQL database at `url`, opened once per process when first needed."""

    def __init__(self, url: str, *, pool_size: int = POOL_SIZE) -> None:
        self.url = check_url(url)
        self.pool_size = pool_size
        self._db: PgDatabase | None = None
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        return redacted(self.url)

    async def db(self) -> PgDatabase:
        if self._db is not None:
            return self._db
        async with self._lock:
            if self._db is None:
                db = await open_pg(self.url, max_size=self.pool_size)
                try:
                    for component, migrations in COMPONENTS.items():
                        await migrate(db, component, migrations)
                except BaseException:
                    await db.close()
                    raise
                self._db = db
        return self._db

    @asynccontextmanager
    async def as_user(self, user_id: str) -> AsyncIterator[Any]:
        """A transaction (a cursor reading rows by column name) in which the row policies
        admit `user_id`'s rows."""
        db = await self.db()
        async with (
            db.pool.connection() as conn,
            conn.pipeline(),
            conn.transaction(),
            conn.cursor(row_factory=dict_row) as cursor,
        ):
            await cursor.execute(SET_USER_SQL, (user_id,))
            yield cursor

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None
