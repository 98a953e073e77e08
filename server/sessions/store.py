"""The session store (DESIGN §8): one conversation's memory, kept per user in SQLite.

State lives in `<data_dir>/users/<user>/sessions.db` (one row per session, its lists as JSON,
and its seen URIs as a log: one row per search, appended, so a search never rewrites the list of
up to 5,000 URIs; past `SEEN_LOG_LIMIT` URIs the log is folded into one row), so it survives
restarts and stateless protocol revisions; a bounded LRU cache keeps recent
sessions in memory. Sessions expire after `ttl` of inactivity; an expired or unknown id is
fresh, empty state, never an error. Every change runs under the session's lock and is written
through to SQLite before the cache sees it, so concurrent calls of one session lose nothing.
The cache belongs to one process: several processes serving one data dir share the database
but not the cache, so several workers keep sessions in PostgreSQL instead (`postgres/sessions.py`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cachetools import LRUCache
from loguru import logger

from knowledge_mcp.sources.errors import SessionWriteError
from knowledge_mcp.sources.storage.db import Database, Migration, user_dir

from ..context import DatabasePool
from . import timeline
from .state import (
    DEFAULT_KEYS,
    MARK_LIMIT,
    QUERY_LIMIT,
    SEEN_LIMIT,
    SEEN_LOG_LIMIT,
    TOUCH_GRANULARITY,
    Key,
    SessionBackend,
    SessionState,
    StoredSession,
    iso,
    open_following,
    utc_now,
)

__all__ = [
    "DEFAULT_KEYS",
    "MARK_LIMIT",
    "QUERY_LIMIT",
    "SEEN_LIMIT",
    "SessionBackend",
    "SessionState",
    "SessionStore",
    "StoredSession",
]

LOCK_STRIPES = 64

MIGRATIONS = (
    Migration(
        1,
        "sessions: seen, viewed, cited, recent queries and defaults per session id",
        """
        CREATE TABLE sessions (
            session_id TEXT PRIMARY KEY,
            seen TEXT NOT NULL DEFAULT '[]',
            viewed TEXT NOT NULL DEFAULT '[]',
            cited TEXT NOT NULL DEFAULT '[]',
            recent_queries TEXT NOT NULL DEFAULT '[]',
            defaults TEXT NOT NULL DEFAULT '{}',
            expires_at TEXT NOT NULL
        );
        CREATE INDEX sessions_expires_at ON sessions (expires_at);
        """,
    ),
    timeline.MIGRATION,
    Migration(
        3,
        "sessions: the seen URIs as a log, one row per search, instead of one list rewritten by each",
        """
        CREATE TABLE session_seen (
            seq INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
            uris TEXT NOT NULL
        );
        CREATE INDEX session_seen_session ON session_seen (session_id, seq);
        INSERT INTO session_seen (session_id, uris)
            SELECT session_id, seen FROM sessions WHERE seen <> '[]' ORDER BY rowid;
        ALTER TABLE sessions DROP COLUMN seen;
        -- One change of a session as one statement (one trip to the connection's thread, and
        -- atomic): the row written, then the log folded (seen_fold) and a batch appended.
        CREATE VIEW session_writes (
            session_id, viewed, cited, recent_queries, defaults, expires_at, current,
            seen_batch, seen_fold
        ) AS SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL;
        CREATE TRIGGER session_writes_insert INSTEAD OF INSERT ON session_writes BEGIN
            INSERT INTO sessions (
                session_id, viewed, cited, recent_queries, defaults, expires_at, current
            ) VALUES (
                NEW.session_id, NEW.viewed, NEW.cited, NEW.recent_queries, NEW.defaults,
                NEW.expires_at, NEW.current
            ) ON CONFLICT (session_id) DO UPDATE SET
                viewed = excluded.viewed, cited = excluded.cited,
                recent_queries = excluded.recent_queries, defaults = excluded.defaults,
                expires_at = excluded.expires_at, current = excluded.current;
            DELETE FROM session_seen WHERE NEW.seen_fold AND session_id = NEW.session_id;
            INSERT INTO session_seen (session_id, uris)
                SELECT NEW.session_id, NEW.seen_batch WHERE NEW.seen_batch IS NOT NULL;
        END;
        """,
    ),
    timeline.APPEND_MIGRATION,
    Migration(
        5,
        "sessions: a search's change and its timeline event as one statement",
        """
        -- A search writes the session's row and seen batch (session_writes) and logs its event
        -- (session_event_writes): one trip to the connection's thread and one commit, not two.
        CREATE VIEW session_search_writes (
            session_id, viewed, cited, recent_queries, defaults, expires_at, current,
            seen_batch, seen_fold, payload, created_at, event_limit
        ) AS SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL;
        CREATE TRIGGER session_search_writes_insert INSTEAD OF INSERT ON session_search_writes BEGIN
            INSERT INTO session_writes VALUES (
                NEW.session_id, NEW.viewed, NEW.cited, NEW.recent_queries, NEW.defaults,
                NEW.expires_at, NEW.current, NEW.seen_batch, NEW.seen_fold
            );
            INSERT INTO session_event_writes VALUES (
                NEW.session_id, 'search', NEW.payload, NEW.created_at, NEW.event_limit
            );
        END;
        """,
    ),
)

SELECT_SQL = """SELECT viewed, cited, recent_queries, defaults, expires_at, current
FROM sessions WHERE session_id = ?"""
SEEN_LOG_SQL = "SELECT uris FROM session_seen WHERE session_id = ? ORDER BY seq"
WRITE_SQL = "INSERT INTO session_writes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
SEARCH_WRITE_SQL = "INSERT INTO session_search_writes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
TOUCH_SQL = "UPDATE sessions SET expires_at = ? WHERE session_id = ?"
DELETE_SQL = "DELETE FROM sessions WHERE session_id = ?"  # and its seen log (ON DELETE CASCADE)
PURGE_SQL = "DELETE FROM sessions WHERE expires_at <= ?"


class SessionStore:
    """Sessions of every user of one data dir, behind one bounded LRU cache."""

    def __init__(
        self,
        data_dir: Path,
        pool: DatabasePool,
        *,
        ttl: timedelta = timedelta(minutes=60),
        cache_size: int = 500,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self.data_dir = data_dir
        self.pool = pool
        self.ttl = ttl
        self.now = now
        self._cache: LRUCache[Key, SessionState] = LRUCache(maxsize=cache_size)
        self._locks = [asyncio.Lock() for _ in range(LOCK_STRIPES)]
        self._purged: set[str] = set()

    def path(self, user_id: str) -> Path:
        return user_dir(self.data_dir, user_id) / "sessions.db"

    async def open(self, user_id: str, session_id: str, *, follow: bool = False) -> StoredSession:
        """The live session, its idle expiry pushed back; expired or unknown ids are fresh state.

        `follow` (a transport's session): the research session it follows, if `session_start`
        made one current for it."""
        return await open_following(self._open, user_id, session_id, follow)

    async def _open(self, user_id: str, session_id: str) -> StoredSession:
        key = (user_id, session_id)
        async with self._lock(key):
            db = await self._database(user_id)
            state = await self._load(db, key)
            now = self.now()
            if state.expires_at <= now:
                state = SessionState(expires_at=now + self.ttl)
                await _best_effort(db.write(DELETE_SQL, (session_id,)))
            elif state.expires_at < now + self.ttl - TOUCH_GRANULARITY:
                state = dataclasses.replace(state, expires_at=now + self.ttl)
                await _best_effort(db.write(TOUCH_SQL, (iso(state.expires_at), session_id)))
            self._cache[key] = state
            return StoredSession(self, key, state)

    def cached(self, user_id: str, session_id: str) -> SessionState | None:
        """The cached live state, without I/O (None when not cached or expired)."""
        state = self._cache.get((user_id, session_id))
        return state if state is not None and state.expires_at > self.now() else None

    async def update(
        self,
        key: Key,
        change: Callable[[SessionState], None],
        seen: Sequence[str] = (),
        event: dict[str, Any] | None = None,
    ) -> SessionState:
        """Apply `change` to a copy of the current state, write it through (with `seen`, the
        URIs it adds to the seen list, appended to its log; with `event`, a search's event
        logged in the same statement), then cache it. The seen list is not copied: `seen` moves
        to its end once the write has succeeded (a failed write leaves the state as it was)."""
        async with self._lock(key):
            db = await self._database(key[0])
            current = await self._load(db, key)
            now = self.now()
            live = current.expires_at > now
            state = current.copy() if live else SessionState(expires_at=now)
            change(state)
            state.expires_at = now + self.ttl
            await _saved(self._write(db, key[1], state, seen, fold=not live, event=event, at=iso(now)))
            state.record_seen(seen)
            self._cache[key] = state
            return state

    async def _write(
        self,
        db: Database,
        session_id: str,
        state: SessionState,
        seen: Sequence[str],
        *,
        fold: bool,
        event: dict[str, Any] | None = None,
        at: str = "",
    ) -> None:
        """The session's row and its seen log, in one statement: `seen` appended as one row, or
        (`fold`, or a log grown past `SEEN_LOG_LIMIT`) the whole log replaced by the list; and
        a search's `event` in the timeline (`timeline.append`'s, at `at`)."""
        fold = fold or state.seen_logged + len(seen) > SEEN_LOG_LIMIT
        batch = state.seen_with(seen) if fold else list(seen)
        params = (*state.row(session_id), json.dumps(batch) if batch else None, fold)
        if event is None:
            await db.write(WRITE_SQL, params)
        else:
            await db.write(SEARCH_WRITE_SQL, (*params, *timeline.event_values(event, at)))
        state.seen_logged = len(batch) if fold else state.seen_logged + len(batch)

    async def record(
        self,
        key: Key,
        query: str,
        uris: Sequence[str],
        known: Iterable[str] = (),
        event: dict[str, Any] | None = None,
    ) -> SessionState:
        """`uris` appended to the seen log (`known` is not needed: the cache is exact) and the
        search's `event` logged, in one statement."""
        return await self.update(key, lambda s: s.record_query(query), seen=uris, event=event)

    async def mark(self, key: Key, which: str, uris: Sequence[str]) -> SessionState:
        return await self.update(key, lambda s: s.mark(which, uris))

    async def set_defaults(self, key: Key, values: Mapping[str, Any]) -> SessionState:
        return await self.update(key, lambda s: s.defaults.update(values))

    async def reset(self, key: Key) -> SessionState:
        """Forget the session; what follows starts fresh (a research session keeps its timeline)."""
        async with self._lock(key):
            db = await self._database(key[0])
            await _saved(db.write(DELETE_SQL, (key[1],)))
            await _saved(db.write(timeline.FORGET_EVENTS_SQL, (key[1],)))
            state = SessionState(expires_at=self.now() + self.ttl)
            self._cache[key] = state
            return state

    async def end(self, user_id: str, session_id: str) -> None:
        """The client ended the session (HTTP DELETE): drop its state."""
        key = (user_id, session_id)
        async with self._lock(key):
            db = await self._database(user_id)
            self._cache.pop(key, None)
            await _best_effort(db.write(DELETE_SQL, (session_id,)))
            await _best_effort(db.write(timeline.FORGET_EVENTS_SQL, (session_id,)))

    async def append(self, key: Key, kind: str, payload: dict[str, Any]) -> None:
        """Log an event in the session's timeline (written through: a `SessionWriteError`)."""
        db = await self._database(key[0])
        await _saved(timeline.append(db, key[1], kind, payload, iso(self.now())))

    async def follow(self, user_id: str, session_id: str, research_id: str) -> None:
        """Make `session_id` (a transport's session) follow the research session `research_id`."""

        def point(state: SessionState) -> None:
            state.current = research_id

        await self.update((user_id, session_id), point)

    async def database(self, user_id: str) -> Database:
        """The user's sessions.db (migrated; expired sessions purged once per process)."""
        return await self._database(user_id)

    async def timeline(self, user_id: str) -> timeline.Timeline:
        """The user's timelines and named research sessions."""
        return timeline.SqliteTimeline(await self._database(user_id))

    async def close(self) -> None:
        """Nothing of its own to close: its databases belong to the pool."""

    def _lock(self, key: Key) -> asyncio.Lock:
        return self._locks[hash(key) % LOCK_STRIPES]

    async def _load(self, db: Database, key: Key) -> SessionState:
        state = self._cache.get(key)
        if state is not None:
            return state
        row = await db.fetchone(SELECT_SQL, (key[1],))
        if row is None:
            return SessionState(self.now() + self.ttl)
        log = await db.fetchall(SEEN_LOG_SQL, (key[1],))
        return SessionState.from_row(tuple(row), [batch[0] for batch in log])

    async def _database(self, user_id: str) -> Database:
        db = await self.pool.open(self.path(user_id), MIGRATIONS)
        if user_id not in self._purged:
            self._purged.add(user_id)
            await _best_effort(db.write(PURGE_SQL, (iso(self.now()),)))
            await _best_effort(db.write(timeline.PURGE_EVENTS_SQL, (iso(self.now() - self.ttl),)))
        return db


async def _saved(write: Awaitable[None]) -> None:
    """A write the caller needs: a failure is a `SessionWriteError` saying why."""
    try:
        await write
    except (sqlite3.Error, OSError) as exc:
        raise SessionWriteError(str(exc)) from exc


async def _best_effort(write: Awaitable[None]) -> None:
    """A write nothing depends on now (pushing an expiry back, purging expired sessions): a
    failure is logged and the session is served from what was read."""
    try:
        await write
    except (sqlite3.Error, OSError) as exc:
        logger.warning("session store: a housekeeping write failed ({})", type(exc).__name__)
