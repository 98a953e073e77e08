"""Rate-limit buckets in PostgreSQL: one token bucket per (user, tool), shared by every worker.

The same bucket as `auth/limits.RateLimiter.acquire` (up to `limit` calls, refilled at
limit/60 a second), refilled and spent in one atomic statement (`INSERT … ON CONFLICT DO
UPDATE … RETURNING`), so calls landing on different workers at once each see the other's spend.
The clock is the database's (`statement_timestamp()`): every worker and host counts on one clock.
The table is UNLOGGED (`schema.py`); a bucket idle for a minute would be full again, so rows
older than that are deleted now and then, keeping the table as small as the active buckets.
"""

from __future__ import annotations

import time

import psycopg
from loguru import logger

from knowledge_mcp.sources.errors import SourceUnavailableError

from ..auth.limits import WINDOW_S
from .state import SharedState

TAKE_SQL = """
INSERT INTO knowledge_rate_buckets AS b (user_id, tool, tokens, allowed, updated_at)
VALUES (%(user)s, %(tool)s, %(limit)s - 1, true, statement_timestamp())
ON CONFLICT (user_id, tool) DO UPDATE SET (tokens, allowed, updated_at) = (
    SELECT refilled - CASE WHEN refilled >= 1 THEN 1 ELSE 0 END, refilled >= 1, statement_timestamp()
    FROM (SELECT least(
        %(limit)s::float8,
        b.tokens + extract(epoch FROM statement_timestamp() - b.updated_at)::float8 * %(rate)s
    ) AS refilled) AS r
)
RETURNING allowed, tokens
"""
PURGE_SQL = (
    "DELETE FROM knowledge_rate_buckets WHERE updated_at < clock_timestamp() - make_interval(secs => %s)"
)
PURGE_EVERY_S = 300.0


class PgBuckets:
    """`SharedBuckets` in the shared database."""

    def __init__(self, state: SharedState) -> None:
        self.state = state
        self._purged = time.monotonic()

    async def take(self, user: str, tool: str, limit: int) -> float | None:
        """As `RateLimiter.acquire`; while PostgreSQL cannot be reached the call is let through
        (a WARNING says so): the limit guards the server, it must not be what takes it down."""
        rate = limit / WINDOW_S
        try:
            db = await self.state.db()
            row = await db.fetchone(TAKE_SQL, {"user": user, "tool": tool, "limit": limit, "rate": rate})
        except (psycopg.Error, OSError, SourceUnavailableError) as exc:
            logger.warning("rate limits: PostgreSQL unavailable ({}); call let through", type(exc).__name__)
            return None
        await self._purge()
        if row is None or row["allowed"]:
            return None
        return (1.0 - float(row["tokens"])) / rate

    async def _purge(self) -> None:
        if time.monotonic() - self._purged < PURGE_EVERY_S:
            return
        self._purged = time.monotonic()
        try:
            await (await self.state.db()).write(PURGE_SQL, (WINDOW_S,))
        except Exception as exc:  # housekeeping: the limit holds either way
            logger.warning("rate limits: purging idle buckets failed ({})", type(exc).__name__)

    async def close(self) -> None:
        await self.state.close()
