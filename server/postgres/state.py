"""The shared state's database: one pool per process, opened (and migrated) on first use.

`SharedState(url)` is built with the server, synchronously; the pool opens in the event loop
that serves (a uvicorn worker's own), at the first call that needs it, and every component's
migrations run then, under the advisory lock, so workers starting together apply each once.

`as_user(user_id)` is a transaction on one connection whose `knowledge.user_id` setting is
the caller's: the row policies of the per-user tables (`schema.py`) admit only that user's
rows. The setting, the statements and COMMIT go out in one pipeline. `send_as(user_id, …)` is
the same in one round trip: the setting and the statements bound here and sent as one simple
query (one implicit transaction), each statement's rows handed back as dicts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import psycopg
from psycopg.rows import dict_row

from knowledge_mcp.sources.errors import KnowledgeError, SessionWriteError, SourceUnavailableError
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import (
    OPEN_TIMEOUT_S,
    SET_USER_SQL,
    PgDatabase,
    Statement,
    check_url,
    open_pg,
    redacted,
)

from .schema import COMPONENTS


class SharedWriteError(SessionWriteError):
    """A change to the shared state did not reach PostgreSQL (callers treat it as any session
    write that failed: the answer stands, a warning says what was not kept)."""

    def __init__(self, exc: BaseException) -> None:
        KnowledgeError.__init__(
            self,
            f"the session could not be saved (PostgreSQL: {type(exc).__name__}); check that the "
            "server at database_url is up, then retry",
        )


@contextmanager
def shared_write() -> Iterator[None]:
    """A change the caller needs: a database failure becomes a `SharedWriteError`."""
    try:
        yield
    except (psycopg.Error, OSError, SourceUnavailableError) as exc:
        raise SharedWriteError(exc) from exc


RETRY_AFTER_S = 5.0
"""After a failed open, calls fail at once for this long (no request waits on a dead server)."""
RETRY_TIMEOUT_S = 2.0
"""How long a later attempt waits for a first connection (the first one waits `open_pg`'s)."""
POOL_SIZE = 8


class SharedState:
    """The PostgreSQL database at `url`, opened once per process when first needed."""

    def __init__(self, url: str, *, pool_size: int = POOL_SIZE) -> None:
        self.url = check_url(url)
        self.pool_size = pool_size
        self._db: PgDatabase | None = None
        self._lock = asyncio.Lock()
        self._failed: tuple[float, SourceUnavailableError] | None = None

    @property
    def name(self) -> str:
        return redacted(self.url)

    async def db(self) -> PgDatabase:
        if self._db is not None:
            return self._db
        async with self._lock:
            if self._db is None:
                self._db = await self._open()
        return self._db

    async def _open(self) -> PgDatabase:
        if self._failed is not None and time.monotonic() - self._failed[0] < RETRY_AFTER_S:
            raise self._failed[1]
        timeout = RETRY_TIMEOUT_S if self._failed is not None else OPEN_TIMEOUT_S
        try:
            db = await open_pg(self.url, max_size=self.pool_size, timeout_s=timeout)
        except SourceUnavailableError as exc:
            self._failed = (time.monotonic(), exc)
            raise
        try:
            for component, migrations in COMPONENTS.items():
                await migrate(db, component, migrations)
        except BaseException:
            await db.close()
            raise
        self._failed = None
        return db

    @asynccontextmanager
    async def saving(self, user_id: str) -> AsyncIterator[Any]:
        """`as_user` for a change the caller needs: a database failure is a `SharedWriteError`
        (naming the kind of failure, never the statement or its values)."""
        with shared_write():
            async with self.as_user(user_id) as cursor:
                yield cursor

    async def send_as(self, user_id: str, statements: Sequence[Statement]) -> list[list[dict[str, Any]]]:
        """`statements` as `user_id` in one round trip and one transaction (a failure in any rolls
        back all); each one's rows by column name."""
        db = await self.db()
        async with db.connection() as conn:
            results = await db.send(conn, [(SET_USER_SQL, (user_id,)), *statements])
        return [[dict(zip(names, row, strict=True)) for row in rows] for names, rows in results[1:]]

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
