"""A user's transaction in pipeline mode: its statements sent together, not one round trip each.

Outside a pipeline every statement waits for its answer before the next is sent: BEGIN, the
user (`schema.as_user`), the statement, COMMIT are four round trips for one read, each a switch
to the server's process and back (on a busy machine, a wait for a core each time). In pipeline
mode (psycopg's `conn.pipeline()`) statements are queued, and the queue is sent and answered
when a result is fetched or the pipeline ends: `read_as` is one round trip, and `bm25.rank`
sends its transaction's set-up and the query terms' statistics together.

What pipeline mode changes for the code inside: a cursor has its rows (and `description`) only
once its results came back, that is after a fetch or after the pipeline; an error surfaces at
that point, not at `execute`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from psycopg import AsyncConnection

from .pool import PgDatabase
from .schema import as_user

READ_ONLY_SQL = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"
SERIAL_SQL = "SET LOCAL max_parallel_workers_per_gather = 0"
"""One user's read touches a few index ranges: parallel workers would only add their start-up."""


@asynccontextmanager
async def user_transaction(
    db: PgDatabase, user_id: str, *, snapshot: bool = False
) -> AsyncIterator[AsyncConnection[Any]]:
    """BEGIN … COMMIT as `user_id` (row-level security) on one borrowed connection, in pipeline
    mode; `snapshot`: read-only, every statement seeing the same snapshot (repeatable read), no
    parallel workers. Results fetched after the block are there: COMMIT went with them."""
    async with db.transaction(pipeline=True) as conn:
        if snapshot:
            await conn.execute(READ_ONLY_SQL)
            await conn.execute(SERIAL_SQL)
        await as_user(conn, user_id)
        yield conn


async def read_as(
    db: PgDatabase, user_id: str, sql: str, params: Sequence[Any] | dict[str, Any] = ()
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """One statement as `user_id`, in one round trip (BEGIN, the user, the statement, COMMIT
    sent together): its column names and rows (no rows: a statement that returns none)."""
    async with user_transaction(db, user_id) as conn:
        cursor = await conn.execute(sql, params)  # type: ignore[arg-type]
    if cursor.description is None:
        return [], []
    return [d.name for d in cursor.description], list(await cursor.fetchall())
