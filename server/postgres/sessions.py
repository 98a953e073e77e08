"""Sessions in PostgreSQL: the `SessionBackend` several workers share (DESIGN §8, §12).

No cache: a worker reads a session when a request opens it, and every change is one atomic
statement (`INSERT … ON CONFLICT DO UPDATE … RETURNING`) that merges into the stored lists in
SQL (`knowledge_append`: the ordered, bounded set) and hands back the new state, so two workers
changing one session at once both land, in some order, and neither overwrites the other.
An expired session is fresh state for whichever statement touches it next. Times come from
the server's clock (`now`), as in the SQLite store, so expiry reads the same in both.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg
from loguru import logger

from knowledge_mcp.sources.errors import SourceUnavailableError

from ..sessions import timeline
from ..sessions.state import (
    DEFAULT_KEYS,
    MARK_LIMIT,
    QUERY_LIMIT,
    SEEN_LIMIT,
    TOUCH_GRANULARITY,
    Key,
    SessionState,
    StoredSession,
    iso,
    open_following,
    utc_now,
)
from .state import SharedState
from .timeline import PgTimeline, append_event, forget_events, purge_events

COLUMNS = "seen, viewed, cited, recent_queries, defaults, current, expires_at"
EMPTY = {"seen": "'{}'", "viewed": "'{}'", "cited": "'{}'", "recent_queries": "'{}'", "defaults": "'{}'"}
EMPTY["current"] = "NULL"
PURGE_EVERY_S = 600.0


def upsert_sql(changes: Mapping[str, str]) -> str:
    """One statement that applies `changes` (column → SQL of its new value, reading the live
    value as `live_<column>`) to the session, created when missing, fresh when expired."""

    def live(column: str) -> str:
        return f"CASE WHEN s.expires_at > %(now)s THEN s.{column} ELSE {EMPTY[column]} END"

    def inserted(column: str) -> str:
        return (
            changes[column].replace(f"live_{column}", EMPTY[column]) if column in changes else EMPTY[column]
        )

    sets = [
        f"{column} = "
        + (changes[column].replace(f"live_{column}", live(column)) if column in changes else live(column))
        for column in EMPTY
    ]
    return f"""
INSERT INTO knowledge_sessions AS s (user_id, session_id, {", ".join(EMPTY)}, expires_at)
VALUES (%(user)s, %(session)s, {", ".join(inserted(c) for c in EMPTY)}, %(expires)s)
ON CONFLICT (user_id, session_id) DO UPDATE SET {", ".join(sets)}, expires_at = %(expires)s
RETURNING {COLUMNS}"""


RECORD_SQL = upsert_sql(
    {
        "seen": f"knowledge_append(live_seen, %(uris)s, {SEEN_LIMIT})",
        "recent_queries": f"knowledge_tail(live_recent_queries, %(queries)s, {QUERY_LIMIT})",
    }
)
MARK_SQL = {
    which: upsert_sql({which: f"knowledge_append(live_{which}, %(uris)s, {MARK_LIMIT})"})
    for which in ("viewed", "cited")
}
DEFAULTS_SQL = upsert_sql({"defaults": "live_defaults || %(values)s::jsonb"})
FOLLOW_SQL = upsert_sql({"current": "%(current)s"})
SELECT_SQL = f"SELECT {COLUMNS} FROM knowledge_sessions WHERE user_id = %s AND session_id = %s"
TOUCH_SQL = f"""UPDATE knowledge_sessions SET expires_at = %s
WHERE user_id = %s AND session_id = %s AND expires_at > %s RETURNING {COLUMNS}"""
DELETE_SQL = "DELETE FROM knowledge_sessions WHERE user_id = %s AND session_id = %s"
PURGE_SQL = "DELETE FROM knowledge_sessions WHERE user_id = %s AND expires_at <= %s"


def state_of(row: Mapping[str, Any]) -> SessionState:
    return SessionState(
        expires_at=row["expires_at"],
        seen=dict.fromkeys(row["seen"]),
        viewed=dict.fromkeys(row["viewed"]),
        cited=dict.fromkeys(row["cited"]),
        recent_queries=list(row["recent_queries"]),
        defaults={k: v for k, v in row["defaults"].items() if k in DEFAULT_KEYS},
        current=row["current"],
    )


class PgSessionStore:
    """Sessions of every user, in the shared PostgreSQL database."""

    def __init__(
        self,
        state: SharedState,
        *,
        ttl: timedelta = timedelta(minutes=60),
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self.state = state
        self.ttl = ttl
        self.now = now
        self._purged: dict[str, float] = {}

    async def open(self, user_id: str, session_id: str, *, follow: bool = False) -> StoredSession:
        """As `SessionStore.open`: the live session (its expiry pushed back), or fresh state."""
        return await open_following(self._open, user_id, session_id, follow)

    async def _open(self, user_id: str, session_id: str) -> StoredSession:
        """The stored state; while PostgreSQL cannot be reached, fresh state (a WARNING says so),
        so the call still answers and its changes fail as warnings (`SharedWriteError`)."""
        await self._purge(user_id)
        try:
            return await self._read(user_id, session_id)
        except (psycopg.Error, OSError, SourceUnavailableError) as exc:
            logger.warning("session store: PostgreSQL unavailable ({}); fresh state", type(exc).__name__)
            return StoredSession(self, (user_id, session_id), SessionState(expires_at=self.now() + self.ttl))

    async def _read(self, user_id: str, session_id: str) -> StoredSession:
        now = self.now()
        key = (user_id, session_id)
        async with self.state.as_user(user_id) as conn:
            row = await (await conn.execute(SELECT_SQL, key)).fetchone()
            if row is not None and row["expires_at"] > now + self.ttl - TOUCH_GRANULARITY:
                return StoredSession(self, key, state_of(row))
            if row is not None and row["expires_at"] > now:
                touched = (now + self.ttl, user_id, session_id, now)
                row = await (await conn.execute(TOUCH_SQL, touched)).fetchone()
            else:  # expired or unknown: fresh state, written by its first change
                row = None
        fresh = SessionState(expires_at=now + self.ttl)
        return StoredSession(self, key, state_of(row) if row is not None else fresh)

    async def record(self, key: Key, query: str, uris: Sequence[str]) -> SessionState:
        queries = [query.strip()] if query.strip() else []
        return await self._change(key, RECORD_SQL, {"uris": list(uris), "queries": queries})

    async def mark(self, key: Key, which: str, uris: Sequence[str]) -> SessionState:
        return await self._change(key, MARK_SQL[which], {"uris": list(uris)})

    async def set_defaults(self, key: Key, values: Mapping[str, Any]) -> SessionState:
        return await self._change(key, DEFAULTS_SQL, {"values": json.dumps(dict(values))})

    async def follow(self, user_id: str, session_id: str, research_id: str) -> None:
        await self._change((user_id, session_id), FOLLOW_SQL, {"current": research_id})

    async def _change(self, key: Key, sql: str, values: dict[str, Any]) -> SessionState:
        now = self.now()
        params = {"user": key[0], "session": key[1], "now": now, "expires": now + self.ttl} | values
        async with self.state.saving(key[0]) as conn:
            row = await (await conn.execute(sql, params)).fetchone()
        return state_of(row)

    async def reset(self, key: Key) -> SessionState:
        """Forget the session; what follows starts fresh (a research session keeps its timeline)."""
        await self.end(*key)
        return SessionState(expires_at=self.now() + self.ttl)

    async def end(self, user_id: str, session_id: str) -> None:
        """The client ended the session (HTTP DELETE): drop its state and unnamed timeline."""
        async with self.state.saving(user_id) as conn:
            await conn.execute(DELETE_SQL, (user_id, session_id))
            await forget_events(conn, user_id, session_id)

    async def append(self, key: Key, kind: str, payload: dict[str, Any]) -> None:
        async with self.state.saving(key[0]) as conn:
            await append_event(conn, key, kind, payload, iso(self.now()))

    async def timeline(self, user_id: str) -> timeline.Timeline:
        return PgTimeline(self.state, user_id)

    async def close(self) -> None:
        await self.state.close()

    async def _purge(self, user_id: str) -> None:
        """Expired sessions and stale unnamed timelines of `user_id`, at most every 10 minutes."""
        last = self._purged.get(user_id)
        if last is not None and time.monotonic() - last < PURGE_EVERY_S:
            return
        self._purged[user_id] = time.monotonic()
        now = self.now()
        try:
            async with self.state.as_user(user_id) as conn:
                await conn.execute(PURGE_SQL, (user_id, now))
                await purge_events(conn, user_id, iso(now - self.ttl))
        except Exception as exc:  # housekeeping: the session is served anyway
            logger.warning("session store: purging expired sessions failed ({})", type(exc).__name__)
