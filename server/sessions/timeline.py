"""A session's timeline: the append-only log of what happened in it, and named research sessions.

Every session logs its searches (query and result URIs), gets, verified quotes, citations
(claim, quote, verdict, passage id) and notes as events in the user's `sessions.db`, beside its
state. `session_start` names a session (`research`): a named session's timeline is kept for
good, while an unnamed one's goes with its state when it expires. A timeline is bounded
(`EVENT_LIMIT`): past it, the oldest searches, gets and verifications make room; citations
and notes are never dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from knowledge_mcp.sources.storage.db import Database, Migration

EVENT_LIMIT = 5000
DROPPABLE = ("search", "get", "verify")
SEARCH_URIS = 20  # result URIs a search event keeps (the first page of knowledge_search)
TEXT_LIMIT = 4000  # characters of a claim, quote or note kept

MIGRATION = Migration(
    2,
    "sessions: named research sessions, each session's event log, the session a connection follows",
    """
    CREATE TABLE research (
        session_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX research_name ON research (name);
    CREATE TABLE session_events (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX session_events_session ON session_events (session_id, id);
    ALTER TABLE sessions ADD COLUMN current TEXT;
    """,
)

APPEND_MIGRATION = Migration(
    4,
    "sessions: an event logged as one statement (the research session touched, the log bounded)",
    """
    -- One trip to the connection's thread, and atomic: the event inserted, its research session's
    -- updated_at moved, and past event_limit the oldest searches, gets and verifications dropped.
    CREATE VIEW session_event_writes (session_id, kind, payload, created_at, event_limit)
        AS SELECT NULL, NULL, NULL, NULL, NULL;
    CREATE TRIGGER session_event_writes_insert INSTEAD OF INSERT ON session_event_writes BEGIN
        INSERT INTO session_events (session_id, kind, payload, created_at)
            VALUES (NEW.session_id, NEW.kind, NEW.payload, NEW.created_at);
        UPDATE research SET updated_at = NEW.created_at WHERE session_id = NEW.session_id;
        DELETE FROM session_events WHERE id IN (
            SELECT id FROM session_events
            WHERE session_id = NEW.session_id AND kind IN ('search', 'get', 'verify')
            ORDER BY id
            LIMIT max(0, (SELECT COUNT(*) FROM session_events WHERE session_id = NEW.session_id)
                - NEW.event_limit)
        );
    END;
    """,
)

APPEND_EVENT_SQL = "INSERT INTO session_event_writes VALUES (?, ?, ?, ?, ?)"
EVENTS_SQL = "SELECT kind, payload, created_at FROM session_events WHERE session_id = ? ORDER BY id"
EVENTS_OF_KIND_SQL = """SELECT kind, payload, created_at FROM session_events
WHERE session_id = ? AND kind = ? ORDER BY id"""
CREATE_RESEARCH_SQL = "INSERT INTO research (session_id, name, created_at, updated_at) VALUES (?, ?, ?, ?)"
RESEARCH_BY_NAME_SQL = "SELECT session_id FROM research WHERE name = ? ORDER BY created_at DESC LIMIT 1"
RESEARCH_SQL = "SELECT session_id, name, created_at, updated_at FROM research WHERE session_id = ?"
LIST_RESEARCH_SQL = """
SELECT r.session_id, r.name, r.created_at, r.updated_at,
       (SELECT COUNT(*) FROM session_events e WHERE e.session_id = r.session_id) AS events,
       (SELECT COUNT(*) FROM session_events e WHERE e.session_id = r.session_id AND e.kind = 'search')
           AS searches,
       (SELECT COUNT(*) FROM session_events e WHERE e.session_id = r.session_id AND e.kind = 'cite')
           AS citations,
       (SELECT COUNT(*) FROM session_events e WHERE e.session_id = r.session_id AND e.kind = 'note') AS notes
FROM research r ORDER BY r.updated_at DESC LIMIT ?
"""
# Events of unnamed sessions whose state is gone (expired, reset or ended) and that are older
# than the idle TTL.
PURGE_EVENTS_SQL = """DELETE FROM session_events WHERE created_at <= ?
    AND session_id NOT IN (SELECT session_id FROM research)
    AND session_id NOT IN (SELECT session_id FROM sessions)"""
FORGET_EVENTS_SQL = """DELETE FROM session_events WHERE session_id = ?
    AND session_id NOT IN (SELECT session_id FROM research)"""


@dataclass(frozen=True)
class Event:
    kind: str
    payload: dict[str, Any]
    at: str


@dataclass(frozen=True)
class Research:
    """A named session, with its counts of events."""

    session_id: str
    name: str
    created_at: str
    updated_at: str
    events: int = 0
    searches: int = 0
    citations: int = 0
    notes: int = 0


def clip(text: str) -> str:
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"


def event_values(payload: dict[str, Any], at: str) -> tuple[str, str, int]:
    """An event's payload, time and the timeline's bound, as `session_event_writes` takes them
    after the session and the kind (`APPEND_MIGRATION`)."""
    return json.dumps(payload, ensure_ascii=False), at, EVENT_LIMIT


async def append(db: Database, session_id: str, kind: str, payload: dict[str, Any], at: str) -> None:
    """Log one event (and make room past `EVENT_LIMIT`), in one statement (`APPEND_MIGRATION`)."""
    await db.write(APPEND_EVENT_SQL, (session_id, kind, *event_values(payload, at)))


async def events(db: Database, session_id: str, kind: str | None = None) -> list[Event]:
    """The session's events in order (only those of `kind`, when given)."""
    if kind is None:
        rows = await db.fetchall(EVENTS_SQL, (session_id,))
    else:
        rows = await db.fetchall(EVENTS_OF_KIND_SQL, (session_id, kind))
    return [Event(row[0], json.loads(row[1]), row[2]) for row in rows]


async def research(db: Database, session_id: str) -> Research | None:
    row = await db.fetchone(RESEARCH_SQL, (session_id,))
    return Research(*row) if row is not None else None


async def named(db: Database, name: str) -> str | None:
    """The user's latest session called `name`, if any."""
    row = await db.fetchone(RESEARCH_BY_NAME_SQL, (name,))
    return str(row[0]) if row is not None else None


async def create(db: Database, session_id: str, name: str, at: str) -> None:
    await db.write(CREATE_RESEARCH_SQL, (session_id, name, at, at))


async def listed(db: Database, limit: int) -> list[Research]:
    return [Research(*row) for row in await db.fetchall(LIST_RESEARCH_SQL, (limit,))]


class Timeline(Protocol):
    """One user's timelines and named research sessions, wherever they are kept."""

    async def events(self, session_id: str, kind: str | None = None) -> list[Event]: ...

    async def research(self, session_id: str) -> Research | None: ...

    async def named(self, name: str) -> str | None: ...

    async def create(self, session_id: str, name: str, at: str) -> None: ...

    async def listed(self, limit: int) -> list[Research]: ...


class SqliteTimeline:
    """The `Timeline` of a user's sessions.db."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def events(self, session_id: str, kind: str | None = None) -> list[Event]:
        return await events(self.db, session_id, kind)

    async def research(self, session_id: str) -> Research | None:
        return await research(self.db, session_id)

    async def named(self, name: str) -> str | None:
        return await named(self.db, name)

    async def create(self, session_id: str, name: str, at: str) -> None:
        await create(self.db, session_id, name, at)

    async def listed(self, limit: int) -> list[Research]:
        return await listed(self.db, limit)
