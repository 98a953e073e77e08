"""One writer at a time of a user's files and items, across every process on the database.

The notes writer (notes_create / notes_update) reads a note's version, writes its file and
indexes it; the watcher re-indexes changed files. With several server processes (`serve
--workers N`) on one PostgreSQL database, two of them may do this for the same user at once:
an update would then check a version another process is about to change (a lost update). Each
holds the user's writer lock for the whole step: a transaction-scoped advisory lock keyed on
the user (released when that transaction ends, also when its connection is lost), taken after
the process's own asyncio lock, so a process queues its own writers without holding a
connection for each. At most half the pool's connections hold a lock at once: the writers
under them need connections of their own to write with.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ...db import validate_user_id
from ..pool import PgDatabase

LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtext('knowledge_writer'), hashtext(%s))"


def local_lock(db: PgDatabase, user_id: str) -> asyncio.Lock:
    """This process's lock of `user_id`'s writes (one per pool and user)."""
    locks: dict[str, asyncio.Lock] = db.caches.setdefault("writer_locks", {})
    return locks.setdefault(user_id, asyncio.Lock())


def holders(db: PgDatabase) -> asyncio.Semaphore:
    """How many of this process's writers may hold a connection for their lock at once."""
    if "writer_holders" not in db.caches:
        db.caches["writer_holders"] = asyncio.Semaphore(max(1, db.pool.max_size // 2))
    semaphore: asyncio.Semaphore = db.caches["writer_holders"]
    return semaphore


@asynccontextmanager
async def writer_lock(db: PgDatabase, user_id: str) -> AsyncIterator[None]:
    """Hold `user_id`'s writer lock (this process's, then the database's) for the block."""
    user_id = validate_user_id(user_id)
    async with local_lock(db, user_id), holders(db), db.transaction() as conn:
        await conn.execute(LOCK_SQL, (user_id,))
        yield
