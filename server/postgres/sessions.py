"""Sessions in PostgreSQL: the `SessionBackend` several workers share (DESIGN §8, §12).

No cache: a worker reads a session when a request opens it, and every change is one atomic
statement (`INSERT … ON CONFLICT DO UPDATE … RETURNING`) that merges into the stored lists in
SQL (`knowledge_append`: the ordered, bounded set) and hands back the new state, so two workers
changing one session at once both land, in some order, and neither overwrites the other. The
seen URIs are a log (`knowledge_session_seen`): a search appends its URIs as one row, in the
same transaction, instead of rewriting an array of up to 5,000; past `SEEN_LOG_LIMIT` URIs the
log is folded into one row (`knowledge_append` again), and it is read back in order
(`seen_from_log`).
An expired session is fresh state for whichever statement touches it next. Times come from
the server's clock (`now`), as in the SQLite store, so expiry reads the same in both.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg
from loguru import logger

from knowledge_mcp.sources.errors import SourceUnavailableError
from knowledge_mcp.sources.storage.postgres.pool import Statement

from ..sessions import timeline
from ..sessions.state import (
    DEFAULT_KEYS,
    MARK_LIMIT,
    QUERY_LIMIT,
    SEEN_LIMIT,
    SEEN_LOG_LIMIT,
    TOUCH_GRANULARITY,
    Key,
    SessionState,
    StoredSession,
    iso,
    open_following,
    seen_from_log,
    utc_now,
)
from .state import SharedState, shared_write
from .timeline import PgTimeline, event_statement, forget_statement, purge_statement

SEEN_LOG = """(
    SELECT coalesce(json_agg(v.uris ORDER BY v.seq), '[]') FROM knowledge_session_seen AS v
    WHERE v.user_id = s.user_id AND v.session_id = s.session_id
) AS seen_log"""
"""The seen log's batches, oldest first, as one JSON value (read back as lists in one parse)."""
OWN_COLUMNS = "viewed, cited, recent_queries, defaults, current, expires_at"
COLUMNS = f"{OWN_COLUMNS}, {SEEN_LOG}"
EMPTY = {"viewed": "'{}'", "cited": "'{}'", "recent_queries": "'{}'", "defaults": "'{}'"}
EMPTY["current"] = "NULL"
PURGE_EVERY_S = 600.0
SEEN_LOG_ROWS = 64
"""Searches in a seen log past which it is folded (as past `SEEN_LOG_LIMIT` URIs): every `open`
reads the log, and many small searches' rows cost more to read than their URIs."""


def upsert_sql(changes: Mapping[str, str], returning: str = COLUMNS) -> str:
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
RETURNING {returning}"""


RECORD_SQL = upsert_sql(
    {"recent_queries": f"knowledge_tail(live_recent_queries, %(queries)s, {QUERY_LIMIT})"},
    returning=OWN_COLUMNS,  # its seen list is the caller's with the search's URIs, not the log
)
MARK_SQL = {
    which: upsert_sql({which: f"knowledge_append(live_{which}, %(uris)s, {MARK_LIMIT})"})
    for which in ("viewed", "cited")
}
DEFAULTS_SQL = upsert_sql({"defaults": "live_defaults || %(values)s::jsonb"})
FOLLOW_SQL = upsert_sql({"current": "%(current)s"})
SELECT_SQL = f"""SELECT {COLUMNS} FROM knowledge_sessions AS s
WHERE user_id = %(user)s AND session_id = %(session)s AND expires_at > %(now)s"""
# A live session whose expiry is more than `TOUCH_GRANULARITY` old is pushed back (read next).
TOUCH_SQL = """UPDATE knowledge_sessions SET expires_at = %(expires)s
WHERE user_id = %(user)s AND session_id = %(session)s AND expires_at > %(now)s
    AND expires_at <= %(expires)s - %(granularity)s"""
# Before any change: the seen log of a session that expired (or is gone) is forgotten.
FORGET_STALE_SEEN_SQL = """DELETE FROM knowledge_session_seen
WHERE user_id = %(user)s AND session_id = %(session)s AND NOT EXISTS (
    SELECT 1 FROM knowledge_sessions
    WHERE user_id = %(user)s AND session_id = %(session)s AND expires_at > %(now)s)"""
LOG_SEEN_SQL = """INSERT INTO knowledge_session_seen (user_id, session_id, n, uris)
VALUES (%(user)s, %(session)s, cardinality(%(uris)s::text[]), %(uris)s)"""
FOLD_SEEN_SQL = f"""WITH old AS (
    DELETE FROM knowledge_session_seen
    WHERE user_id = %(user)s AND session_id = %(session)s AND (
        SELECT sum(n) > {SEEN_LOG_LIMIT} OR count(*) > {SEEN_LOG_ROWS} FROM knowledge_session_seen
        WHERE user_id = %(user)s AND session_id = %(session)s
    )
    RETURNING seq, uris
), folded AS (
    SELECT max(o.seq) AS seq,
        knowledge_append('{{}}', array_agg(t.u ORDER BY o.seq, t.pos), {SEEN_LIMIT}) AS uris
    FROM old AS o, unnest(o.uris) WITH ORDINALITY AS t(u, pos)
)
INSERT INTO knowledge_session_seen (user_id, session_id, seq, n, uris)
SELECT %(user)s, %(session)s, seq, cardinality(uris), uris FROM folded WHERE seq IS NOT NULL"""
FORGET_SEEN_SQL = "DELETE FROM knowledge_session_seen WHERE user_id = %(user)s AND session_id = %(session)s"
PURGE_SEEN_SQL = """DELETE FROM knowledge_session_seen AS v WHERE user_id = %(user)s AND NOT EXISTS (
    SELECT 1 FROM knowledge_sessions AS s
    WHERE s.user_id = v.user_id AND s.session_id = v.session_id AND s.expires_at > %(now)s)"""
DELETE_SQL = "DELETE FROM knowledge_sessions WHERE user_id = %(user)s AND session_id = %(session)s"
PURGE_SQL = "DELETE FROM knowledge_sessions WHERE user_id = %(user)s AND expires_at <= %(now)s"


def state_of(row: Mapping[str, Any], log: Sequence[Iterable[str]] | None = None) -> SessionState:
    """The state of a row; its seen list from the row's `seen_log`, or else from `log`."""
    seen = seen_from_log(row["seen_log"] if log is None else log)
    return SessionState(
        expires_at=row["expires_at"],
        seen=seen,
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
        """The live session, its expiry pushed back when due, in one round trip."""
        now = self.now()
        key = (user_id, session_id)
        params = {"user": user_id, "session": session_id, "now": now, "expires": now + self.ttl}
        params["granularity"] = TOUCH_GRANULARITY
        _, rows = await self.state.send_as(user_id, [(TOUCH_SQL, params), (SELECT_SQL, params)])
        # expired or unknown: fresh state, written by its first change
        state = state_of(rows[0]) if rows else SessionState(expires_at=now + self.ttl)
        return StoredSession(self, key, state)

    async def record(
        self,
        key: Key,
        query: str,
        uris: Sequence[str],
        known: Iterable[str] = (),
        event: dict[str, Any] | None = None,
    ) -> SessionState:
        """The search's URIs appended to the seen log and its `event` (if any) logged, in one round
        trip; the seen list handed back is `known` (the seen list the caller read when it opened
        the session) with them, not the log read back: another worker's searches since then show
        from the next `open`."""
        queries = [query.strip()] if query.strip() else []
        logged = (LOG_SEEN_SQL, FOLD_SEEN_SQL) if uris else ()
        values = {"uris": list(uris), "queries": queries}
        after = [event_statement(key, "search", event, iso(self.now()))] if event is not None else []
        return await self._change(key, RECORD_SQL, values, logged, log=[known, uris], after=after)

    async def mark(self, key: Key, which: str, uris: Sequence[str]) -> SessionState:
        return await self._change(key, MARK_SQL[which], {"uris": list(uris)})

    async def set_defaults(self, key: Key, values: Mapping[str, Any]) -> SessionState:
        return await self._change(key, DEFAULTS_SQL, {"values": json.dumps(dict(values))})

    async def follow(self, user_id: str, session_id: str, research_id: str) -> None:
        await self._change((user_id, session_id), FOLLOW_SQL, {"current": research_id})

    async def _change(
        self,
        key: Key,
        sql: str,
        values: dict[str, Any],
        before: Sequence[str] = (),
        log: Sequence[Iterable[str]] | None = None,
        after: Sequence[Statement] = (),
    ) -> SessionState:
        """`sql` (an upsert) in one round trip and one transaction, after an expired session's
        seen log is forgotten and the statements `before` ran (a search's URIs logged), before
        the statements `after` (its timeline event)."""
        now = self.now()
        params = {"user": key[0], "session": key[1], "now": now, "expires": now + self.ttl} | values
        statements = [(s, params) for s in (FORGET_STALE_SEEN_SQL, *before, sql)]
        with shared_write():
            results = await self.state.send_as(key[0], [*statements, *after])
        return state_of(results[len(statements) - 1][0], log)

    async def reset(self, key: Key) -> SessionState:
        """Forget the session; what follows starts fresh (a research session keeps its timeline)."""
        await self.end(*key)
        return SessionState(expires_at=self.now() + self.ttl)

    async def end(self, user_id: str, session_id: str) -> None:
        """The client ended the session (HTTP DELETE): drop its state and unnamed timeline."""
        params = {"user": user_id, "session": session_id}
        statements = [(DELETE_SQL, params), (FORGET_SEEN_SQL, params), forget_statement(user_id, session_id)]
        with shared_write():
            await self.state.send_as(user_id, statements)

    async def append(self, key: Key, kind: str, payload: dict[str, Any]) -> None:
        with shared_write():
            await self.state.send_as(key[0], [event_statement(key, kind, payload, iso(self.now()))])

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
            params = {"user": user_id, "now": now}
            purges = [(PURGE_SQL, params), (PURGE_SEEN_SQL, params)]
            await self.state.send_as(user_id, [*purges, purge_statement(user_id, iso(now - self.ttl))])
        except Exception as exc:  # housekeeping: the session is served anyway
            logger.warning("session store: purging expired sessions failed ({})", type(exc).__name__)
