"""The session store (DESIGN §8): one conversation's memory, kept per user in SQLite.

State lives in `<data_dir>/users/<user>/sessions.db` (one row per session, its lists as JSON),
so it survives restarts and stateless protocol revisions; a bounded LRU cache keeps recent
sessions in memory. Sessions expire after `ttl` of inactivity; an expired or unknown id is
fresh, empty state, never an error. Every change runs under the session's lock and is written
through to SQLite before the cache sees it, so concurrent calls of one session lose nothing.
The cache belongs to one process: several processes serving one data dir share the database
but not the cache (a shared store is DESIGN §12's path past one machine).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cachetools import LRUCache
from loguru import logger

from knowledge_mcp.sources.errors import SessionWriteError
from knowledge_mcp.sources.storage.db import Database, Migration, user_dir

from ..context import DatabasePool
from . import timeline

SEEN_LIMIT = 5000
QUERY_LIMIT = 50
MARK_LIMIT = 1000  # viewed and cited, each
DEFAULT_KEYS = ("snippet_length", "max_tokens", "sibling_window", "order_by", "chars_per_token")
# An idle session's expiry is pushed back at most once per this interval (saves a write per call).
TOUCH_GRANULARITY = timedelta(minutes=1)
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
)

SELECT_SQL = """SELECT seen, viewed, cited, recent_queries, defaults, expires_at, current
FROM sessions WHERE session_id = ?"""
UPSERT_SQL = """
INSERT INTO sessions (session_id, seen, viewed, cited, recent_queries, defaults, expires_at, current)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (session_id) DO UPDATE SET
    seen = excluded.seen, viewed = excluded.viewed, cited = excluded.cited,
    recent_queries = excluded.recent_queries, defaults = excluded.defaults,
    expires_at = excluded.expires_at, current = excluded.current
"""
TOUCH_SQL = "UPDATE sessions SET expires_at = ? WHERE session_id = ?"
DELETE_SQL = "DELETE FROM sessions WHERE session_id = ?"
PURGE_SQL = "DELETE FROM sessions WHERE expires_at <= ?"

Key = tuple[str, str]  # (user_id, session_id)


def utc_now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    """UTC, fixed width, so ISO strings also compare correctly as text (PURGE_SQL)."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _bounded(items: dict[str, None], limit: int) -> dict[str, None]:
    extra = len(items) - limit
    return dict.fromkeys(list(items)[extra:]) if extra > 0 else items


@dataclass
class SessionState:
    """One session's memory. Ordered sets (dicts) keep first-to-last order, most recent last."""

    expires_at: datetime
    seen: dict[str, None] = field(default_factory=dict)
    viewed: dict[str, None] = field(default_factory=dict)
    cited: dict[str, None] = field(default_factory=dict)
    recent_queries: list[str] = field(default_factory=list)
    defaults: dict[str, Any] = field(default_factory=dict)
    current: str | None = None
    """The research session this (connection's) session follows (`session_start`)."""

    def copy(self) -> SessionState:
        return dataclasses.replace(
            self,
            seen=dict(self.seen),
            viewed=dict(self.viewed),
            cited=dict(self.cited),
            recent_queries=list(self.recent_queries),
            defaults=dict(self.defaults),
        )

    def record_results(self, query: str, uris: Iterable[str]) -> None:
        if query.strip():
            self.recent_queries = [*self.recent_queries, query.strip()][-QUERY_LIMIT:]
        for uri in uris:
            self.seen.pop(uri, None)  # re-seen moves to the end
            self.seen[uri] = None
        self.seen = _bounded(self.seen, SEEN_LIMIT)

    def mark(self, which: str, uris: Iterable[str]) -> None:
        marks: dict[str, None] = getattr(self, which)
        for uri in uris:
            marks.pop(uri, None)
            marks[uri] = None
        setattr(self, which, _bounded(marks, MARK_LIMIT))

    def row(self, session_id: str) -> tuple[str | None, ...]:
        return (
            session_id,
            json.dumps(list(self.seen)),
            json.dumps(list(self.viewed)),
            json.dumps(list(self.cited)),
            json.dumps(self.recent_queries),
            json.dumps(self.defaults),
            _iso(self.expires_at),
            self.current,
        )

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> SessionState:
        seen, viewed, cited, queries, defaults, expires_at, current = row
        return cls(
            expires_at=datetime.fromisoformat(expires_at),
            seen=dict.fromkeys(json.loads(seen)),
            viewed=dict.fromkeys(json.loads(viewed)),
            cited=dict.fromkeys(json.loads(cited)),
            recent_queries=list(json.loads(queries)),
            defaults={k: v for k, v in json.loads(defaults).items() if k in DEFAULT_KEYS},
            current=current,
        )


class StoredSession:
    """A handle on one user's session; implements aggregator.host.Session."""

    def __init__(self, store: SessionStore, key: Key, state: SessionState, via: str | None = None) -> None:
        self._store = store
        self._key = key
        self._state = state
        self.via = via
        """The transport session that led here by following its `current` research session."""

    @property
    def user_id(self) -> str:
        return self._key[0]

    @property
    def session_id(self) -> str:
        return self._key[1]

    @property
    def seen(self) -> Sequence[str]:
        return tuple(self._state.seen)

    @property
    def viewed(self) -> Sequence[str]:
        return tuple(self._state.viewed)

    @property
    def cited(self) -> Sequence[str]:
        return tuple(self._state.cited)

    @property
    def recent_queries(self) -> Sequence[str]:
        return tuple(self._state.recent_queries)

    @property
    def defaults(self) -> dict[str, Any]:
        """Only the defaults set for this session; the rest fall back to the server's config."""
        return dict(self._state.defaults)

    @property
    def expires_at(self) -> datetime:
        return self._state.expires_at

    async def record_results(self, query: str, uris: Sequence[str]) -> None:
        await self._update(lambda s: s.record_results(query, uris))
        payload = {"query": timeline.clip(query.strip()), "uris": list(uris[: timeline.SEARCH_URIS])}
        await self.log("search", payload | {"count": len(uris)})

    async def mark_viewed(self, uri: str) -> None:
        await self._update(lambda s: s.mark("viewed", [uri]))
        await self.log("get", {"uri": uri})

    async def cite(self, uris: Sequence[str], citations: Sequence[dict[str, Any]] = ()) -> None:
        """Mark `uris` cited and log each citation (`citations`: uri, claim, quote, verdict…;
        default: the bare uris)."""
        await self._update(lambda s: s.mark("cited", uris))
        for citation in citations or [{"uri": uri} for uri in uris]:
            await self.log("cite", citation)

    async def note(self, text: str) -> None:
        await self.log("note", {"text": timeline.clip(text)})

    async def log_verdict(self, quote: str, verdict: dict[str, Any]) -> None:
        """A verify_quote call: the quote, whether and where it was found."""
        await self.log("verify", {"quote": timeline.clip(quote)} | verdict)

    async def log(self, kind: str, payload: dict[str, Any]) -> None:
        await self._store.append(self._key, kind, payload)

    async def set_defaults(self, values: Mapping[str, Any]) -> None:
        unknown = set(values) - set(DEFAULT_KEYS)
        if unknown:
            raise ValueError(f"not session defaults: {sorted(unknown)}")
        await self._update(lambda s: s.defaults.update(values))

    async def reset(self) -> None:
        self._state = await self._store.reset(self._key)

    async def _update(self, change: Callable[[SessionState], None]) -> None:
        self._state = await self._store.update(self._key, change)


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
        session = await self._open(user_id, session_id)
        current = session._state.current
        if follow and current:
            followed = await self._open(user_id, current)
            followed.via = session_id
            return followed
        return session

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
                await _best_effort(db.write(TOUCH_SQL, (_iso(state.expires_at), session_id)))
            self._cache[key] = state
            return StoredSession(self, key, state)

    def cached(self, user_id: str, session_id: str) -> SessionState | None:
        """The cached live state, without I/O (None when not cached or expired)."""
        state = self._cache.get((user_id, session_id))
        return state if state is not None and state.expires_at > self.now() else None

    async def update(self, key: Key, change: Callable[[SessionState], None]) -> SessionState:
        """Apply `change` to a copy of the current state, write it through, then cache it."""
        async with self._lock(key):
            db = await self._database(key[0])
            current = await self._load(db, key)
            now = self.now()
            state = current.copy() if current.expires_at > now else SessionState(expires_at=now)
            change(state)
            state.expires_at = now + self.ttl
            await _saved(db.write(UPSERT_SQL, state.row(key[1])))
            self._cache[key] = state
            return state

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
        await _saved(timeline.append(db, key[1], kind, payload, _iso(self.now())))

    async def follow(self, user_id: str, session_id: str, research_id: str) -> None:
        """Make `session_id` (a transport's session) follow the research session `research_id`."""

        def point(state: SessionState) -> None:
            state.current = research_id

        await self.update((user_id, session_id), point)

    async def database(self, user_id: str) -> Database:
        """The user's sessions.db (migrated; expired sessions purged once per process)."""
        return await self._database(user_id)

    def _lock(self, key: Key) -> asyncio.Lock:
        return self._locks[hash(key) % LOCK_STRIPES]

    async def _load(self, db: Database, key: Key) -> SessionState:
        state = self._cache.get(key)
        if state is not None:
            return state
        row = await db.fetchone(SELECT_SQL, (key[1],))
        return SessionState.from_row(tuple(row)) if row is not None else SessionState(self.now() + self.ttl)

    async def _database(self, user_id: str) -> Database:
        db = await self.pool.open(self.path(user_id), MIGRATIONS)
        if user_id not in self._purged:
            self._purged.add(user_id)
            await _best_effort(db.write(PURGE_SQL, (_iso(self.now()),)))
            await _best_effort(db.write(timeline.PURGE_EVENTS_SQL, (_iso(self.now() - self.ttl),)))
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
        logger.warning("session store: a housekeeping write failed ({})", exc)
