"""A bulk write's full-text buffer: FTS5 keeps a batch's terms in memory until the batch's
statements end, instead of writing a segment every megabyte.

FTS5 collects the terms of new rows in memory and writes them out as a new segment of its index
when that buffer passes its `hashsize` (1 MB by default), at the end of each writing statement
and at commit; after each write it merges segments (`automerge`). A folder import's batch holds
several megabytes of text, so with the default every batch wrote a segment per megabyte and
merged them again. Inside one transaction of at least `BULK_ITEMS` items the buffer is made
`BUFFER_BYTES` and set back before the commit, in the same transaction: the index holds the same
terms, in fewer and larger segments (docs/performance.md, Build 5, fifth pass). The setting
never outlives the transaction: a crash or an error rolls it back with the batch, and a table
whose `hashsize` was never set has no row for it afterwards either.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiosqlite

BULK_ITEMS = 100
"""A transaction writing fewer items (a watched file's change) leaves the buffer as it is."""
BUFFER_BYTES = 64 << 20
"""The buffer of a bulk write: more than a batch's text (`runs.BATCH_BYTES`, 16 MB), and a
bound on the memory it may take."""
DEFAULT_BYTES = 1 << 20
"""FTS5's own `hashsize`, set back when the table had no value of its own."""
HASHSIZE_SQL = "INSERT INTO {p}_chunks_fts({p}_chunks_fts, rank) VALUES('hashsize', ?)"
READ_HASHSIZE_SQL = "SELECT v FROM {p}_chunks_fts_config WHERE k = 'hashsize'"
FORGET_HASHSIZE_SQL = "DELETE FROM {p}_chunks_fts_config WHERE k = 'hashsize'"


@asynccontextmanager
async def bulk_fts_buffer(conn: aiosqlite.Connection, p: str, items: int) -> AsyncIterator[None]:
    """Inside the caller's transaction: a large buffer for source `p`'s full-text index while
    `items` items are written (when they are at least `BULK_ITEMS`), set back as it was at the
    end. On an error nothing is set back here: the caller's rollback undoes the setting."""
    if items < BULK_ITEMS:
        yield
        return
    async with conn.execute(READ_HASHSIZE_SQL.format(p=p)) as cursor:
        row = await cursor.fetchone()
    await conn.execute(HASHSIZE_SQL.format(p=p), (BUFFER_BYTES,))
    yield
    await conn.execute(HASHSIZE_SQL.format(p=p), (DEFAULT_BYTES if row is None else row[0],))
    if row is None:  # the same config table as before the write (FTS5 reads no row as its default)
        await conn.execute(FORGET_HASHSIZE_SQL.format(p=p))
