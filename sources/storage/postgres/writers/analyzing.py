"""Fresh planner statistics for a user's partitions after a bulk write.

A user's partitions are made empty on their first write (`schema.ensure_user`) and autovacuum
analyzes them only later: right after `migrate --to` or a large import the planner still
believes them empty and, for one word of a query, scans a source's whole postings, many times
slower than after ANALYZE (`docs/performance.md`, "PostgreSQL"). So the copy, and an import run
that wrote many chunks (`needs_analyze`), ANALYZE the user's partitions before they return. The
store's role owns them, which is all ANALYZE asks of it; a user with no partitions yet (nothing
written) is left alone.
"""

from __future__ import annotations

from typing import Any

from loguru import logger
from psycopg import sql

from ..schema import HAS_PARTITION_SQL, PARTITIONED, as_user, partition_name

MANY_CHUNKS = 1_000
"""Chunks written in one run that always call for ANALYZE."""
SHARE = 10
"""… or chunks written that are at least 1/SHARE of the user's chunks after the run."""
USER_CHUNKS_SQL = "SELECT coalesce(sum(chunks), 0) FROM pg_corpus_stats WHERE user_id = %s"


def needs_analyze(written: int, total: int) -> bool:
    """Whether `written` chunks of a run change a user's `total` chunks enough to ANALYZE."""
    if written <= 0:
        return False
    return written >= MANY_CHUNKS or written * SHARE >= total


async def analyze_user(db: Any, user_id: str) -> list[str]:
    """ANALYZE each of `user_id`'s partitions that exists; the tables analyzed."""
    done: list[str] = []
    async with db.transaction() as conn:
        for table in PARTITIONED:
            part = partition_name(table, user_id)
            row = await (await conn.execute(HAS_PARTITION_SQL, (part,))).fetchone()
            if row and row[0]:
                await conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(part)))
                done.append(table)
    logger.debug("analyzed {} partitions of a user", len(done))
    return done


async def analyze_after(db: Any, user_id: str, written: int) -> bool:
    """ANALYZE `user_id`'s partitions when a run's `written` chunks call for it (`needs_analyze`)."""
    if written <= 0:
        return False
    async with db.transaction() as conn:
        await as_user(conn, user_id)
        row = await (await conn.execute(USER_CHUNKS_SQL, (user_id,))).fetchone()
    if not needs_analyze(written, int(row[0]) if row else 0):
        return False
    await analyze_user(db, user_id)
    return True
