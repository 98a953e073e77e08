"""Timelines and named research sessions in PostgreSQL: `sessions/timeline.py`'s tables with a
`user_id` column, every statement filtered by it (and the row policies behind that)."""

from __future__ import annotations

import json
from typing import Any

from knowledge_mcp.sources.storage.postgres.pool import Statement

from ..sessions.timeline import DROPPABLE, EVENT_LIMIT, Event, Research
from .state import SharedState

APPEND_EVENT_SQL = """
WITH counted AS (
    SELECT count(*) + 1 - %(limit)s AS extra, count(*) FILTER (WHERE kind = ANY(%(droppable)s)) AS room
    FROM knowledge_session_events WHERE user_id = %(user)s AND session_id = %(session)s
), added AS (
    INSERT INTO knowledge_session_events (user_id, session_id, kind, payload, created_at)
    SELECT %(user)s, %(session)s, %(kind)s, %(payload)s, %(at)s FROM counted
    WHERE NOT (%(kind)s = ANY(%(droppable)s) AND extra > room)
), touched AS (
    UPDATE knowledge_research SET updated_at = %(at)s WHERE user_id = %(user)s AND session_id = %(session)s
)
DELETE FROM knowledge_session_events WHERE id IN (
    SELECT id FROM knowledge_session_events
    WHERE user_id = %(user)s AND session_id = %(session)s AND kind = ANY(%(droppable)s)
    ORDER BY id LIMIT (SELECT greatest(extra, 0) FROM counted))
"""
"""One event logged, its research session touched and, past `EVENT_LIMIT`, the oldest droppable
events dropped, in one statement (as SQLite's `session_event_writes`). Its parts see the log as
it was: when the old droppable events cannot make room (`room`), the new event is the one
dropped (not inserted) if it is droppable, as when it was inserted and the oldest deleted."""
EVENTS_SQL = """SELECT kind, payload, created_at FROM knowledge_session_events
WHERE user_id = %s AND session_id = %s AND (%s::text IS NULL OR kind = %s) ORDER BY id"""
CREATE_RESEARCH_SQL = """INSERT INTO knowledge_research (user_id, session_id, name, created_at, updated_at)
VALUES (%s, %s, %s, %s, %s)"""
RESEARCH_BY_NAME_SQL = """SELECT session_id FROM knowledge_research WHERE user_id = %s AND name = %s
ORDER BY created_at DESC LIMIT 1"""
RESEARCH_SQL = """SELECT session_id, name, created_at, updated_at FROM knowledge_research
WHERE user_id = %s AND session_id = %s"""
LIST_RESEARCH_SQL = """
SELECT r.session_id, r.name, r.created_at, r.updated_at,
       count(e.id) AS events,
       count(e.id) FILTER (WHERE e.kind = 'search') AS searches,
       count(e.id) FILTER (WHERE e.kind = 'cite') AS citations,
       count(e.id) FILTER (WHERE e.kind = 'note') AS notes
FROM knowledge_research r
LEFT JOIN knowledge_session_events e ON e.user_id = r.user_id AND e.session_id = r.session_id
WHERE r.user_id = %s
GROUP BY r.session_id, r.name, r.created_at, r.updated_at ORDER BY r.updated_at DESC LIMIT %s
"""
PURGE_EVENTS_SQL = """DELETE FROM knowledge_session_events e
WHERE e.user_id = %(user)s AND e.created_at <= %(before)s
    AND NOT EXISTS (SELECT 1 FROM knowledge_research r
                    WHERE r.user_id = e.user_id AND r.session_id = e.session_id)
    AND NOT EXISTS (SELECT 1 FROM knowledge_sessions s
                    WHERE s.user_id = e.user_id AND s.session_id = e.session_id)"""
FORGET_EVENTS_SQL = """DELETE FROM knowledge_session_events
WHERE user_id = %(user)s AND session_id = %(session)s
    AND NOT EXISTS (SELECT 1 FROM knowledge_research r
                    WHERE r.user_id = %(user)s AND r.session_id = %(session)s)"""


def event_statement(key: tuple[str, str], kind: str, payload: dict[str, Any], at: str) -> Statement:
    """The statement that logs one event of `key`'s session (`APPEND_EVENT_SQL`)."""
    text = json.dumps(payload, ensure_ascii=False)
    params = {"user": key[0], "session": key[1], "kind": kind, "payload": text, "at": at}
    return APPEND_EVENT_SQL, params | {"limit": EVENT_LIMIT, "droppable": list(DROPPABLE)}


def forget_statement(user_id: str, session_id: str) -> Statement:
    return FORGET_EVENTS_SQL, {"user": user_id, "session": session_id}


def purge_statement(user_id: str, before: str) -> Statement:
    return PURGE_EVENTS_SQL, {"user": user_id, "before": before}


class PgTimeline:
    """One user's `Timeline` in the shared database."""

    def __init__(self, state: SharedState, user_id: str) -> None:
        self.state = state
        self.user_id = user_id

    async def _rows(self, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        async with self.state.as_user(self.user_id) as cursor:
            await cursor.execute(sql, params)
            rows: list[dict[str, Any]] = await cursor.fetchall()
            return rows

    async def events(self, session_id: str, kind: str | None = None) -> list[Event]:
        rows = await self._rows(EVENTS_SQL, (self.user_id, session_id, kind, kind))
        return [Event(r["kind"], json.loads(r["payload"]), r["created_at"]) for r in rows]

    async def research(self, session_id: str) -> Research | None:
        rows = await self._rows(RESEARCH_SQL, (self.user_id, session_id))
        return Research(**rows[0]) if rows else None

    async def named(self, name: str) -> str | None:
        rows = await self._rows(RESEARCH_BY_NAME_SQL, (self.user_id, name))
        return str(rows[0]["session_id"]) if rows else None

    async def create(self, session_id: str, name: str, at: str) -> None:
        async with self.state.as_user(self.user_id) as cursor:
            await cursor.execute(CREATE_RESEARCH_SQL, (self.user_id, session_id, name, at, at))

    async def listed(self, limit: int) -> list[Research]:
        return [Research(**r) for r in await self._rows(LIST_RESEARCH_SQL, (self.user_id, limit))]
