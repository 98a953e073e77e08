"""A session's state (DESIGN §8) and the handle tools hold on it, whatever store keeps it.

`SessionState` is one conversation's memory: seen URIs (bounded, most recent last), recent
queries, viewed and cited ids, per-session defaults, the research session it follows. Both stores
keep the seen URIs as a log, one batch per search appended (a search's answer never waits for the
whole list to be rewritten); reading the log back (`seen_from_log`) gives the bounded list, and a
store folds a log grown past `SEEN_LOG_LIMIT` URIs into one batch.
`StoredSession` is a handle on one user's session; every change goes through its store (a
`SessionBackend`: SQLite, `store.py`, or PostgreSQL, `postgres/sessions.py`) and comes back as
the new state.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from . import timeline

SEEN_LIMIT = 5000
QUERY_LIMIT = 50
MARK_LIMIT = 1000  # viewed and cited, each
SEEN_LOG_LIMIT = 2 * SEEN_LIMIT
"""URIs in a session's seen log (duplicates and evicted ones counted) past which it is folded."""
DEFAULT_KEYS = ("snippet_length", "max_tokens", "sibling_window", "order_by", "chars_per_token")
# An idle session's expiry is pushed back at most once per this interval (saves a write per call).
TOUCH_GRANULARITY = timedelta(minutes=1)

Key = tuple[str, str]  # (user_id, session_id)


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """UTC, fixed width, so ISO strings also compare correctly as text (PURGE_SQL)."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _bounded(items: dict[str, None], limit: int) -> dict[str, None]:
    """`items` with only its last `limit` keys, the oldest dropped in place: a search past the
    5,000 seen URIs drops as many as it adds, without copying the kept ones
    (`docs/performance.md`, "Session 15: the page's own cost")."""
    for oldest in list(itertools.islice(items, max(0, len(items) - limit))):
        del items[oldest]
    return items


def _moved_to_end(items: dict[str, None], uris: Iterable[str]) -> None:
    for uri in uris:
        items.pop(uri, None)  # re-seen moves to the end
        items[uri] = None


def seen_from_log(batches: Iterable[Iterable[str]]) -> dict[str, None]:
    """The seen URIs a log of batches (oldest first) says: ordered, deduplicated, bounded."""
    seen: dict[str, None] = {}
    for batch in batches:
        _moved_to_end(seen, batch)
    return _bounded(seen, SEEN_LIMIT)


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
    seen_logged: int = 0
    """URIs in the SQLite store's seen log, as far as this process wrote or read it (the log is
    folded past `SEEN_LOG_LIMIT`)."""

    def copy(self) -> SessionState:
        """A copy for a change to edit, all but its seen URIs: those (up to 5,000, not copied on
        every search) are this state's own dict, which only `record_seen` changes, once the
        store has written the search (`SessionStore.update`)."""
        return dataclasses.replace(
            self,
            viewed=dict(self.viewed),
            cited=dict(self.cited),
            recent_queries=list(self.recent_queries),
            defaults=dict(self.defaults),
        )

    def record_results(self, query: str, uris: Iterable[str]) -> None:
        self.record_query(query)
        self.record_seen(uris)

    def record_query(self, query: str) -> None:
        if query.strip():
            self.recent_queries = [*self.recent_queries, query.strip()][-QUERY_LIMIT:]

    def record_seen(self, uris: Iterable[str]) -> None:
        _moved_to_end(self.seen, uris)
        self.seen = _bounded(self.seen, SEEN_LIMIT)

    def seen_with(self, uris: Iterable[str]) -> list[str]:
        """The seen URIs `record_seen(uris)` would leave, this state unchanged."""
        seen = dict(self.seen)
        _moved_to_end(seen, uris)
        return list(_bounded(seen, SEEN_LIMIT))

    def mark(self, which: str, uris: Iterable[str]) -> None:
        marks: dict[str, None] = getattr(self, which)
        _moved_to_end(marks, uris)
        setattr(self, which, _bounded(marks, MARK_LIMIT))

    def row(self, session_id: str) -> tuple[str | None, ...]:
        """The SQLite row (the seen URIs are a log of their own: `store.py`)."""
        return (
            session_id,
            json.dumps(list(self.viewed)),
            json.dumps(list(self.cited)),
            json.dumps(self.recent_queries),
            json.dumps(self.defaults),
            iso(self.expires_at),
            self.current,
        )

    @classmethod
    def from_row(cls, row: Sequence[Any], log: Sequence[str]) -> SessionState:
        """The state of a SQLite row and its seen log (its batches as JSON lists, oldest first)."""
        viewed, cited, queries, defaults, expires_at, current = row
        batches = [json.loads(batch) for batch in log]
        return cls(
            expires_at=datetime.fromisoformat(expires_at),
            seen=seen_from_log(batches),
            seen_logged=sum(map(len, batches)),
            viewed=dict.fromkeys(json.loads(viewed)),
            cited=dict.fromkeys(json.loads(cited)),
            recent_queries=list(json.loads(queries)),
            defaults={k: v for k, v in json.loads(defaults).items() if k in DEFAULT_KEYS},
            current=current,
        )


class StoredSession:
    """A handle on one user's session; implements aggregator.host.Session."""

    def __init__(self, store: SessionBackend, key: Key, state: SessionState, via: str | None = None) -> None:
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
        payload = {"query": timeline.clip(query.strip()), "uris": list(uris[: timeline.SEARCH_URIS])}
        event = payload | {"count": len(uris)}
        self._state = await self._store.record(self._key, query, uris, known=self._state.seen, event=event)

    async def mark_viewed(self, uri: str) -> None:
        self._state = await self._store.mark(self._key, "viewed", [uri])
        await self.log("get", {"uri": uri})

    async def cite(self, uris: Sequence[str], citations: Sequence[dict[str, Any]] = ()) -> None:
        """Mark `uris` cited and log each citation (`citations`: uri, claim, quote, verdict…;
        default: the bare uris)."""
        self._state = await self._store.mark(self._key, "cited", uris)
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
        self._state = await self._store.set_defaults(self._key, values)

    async def reset(self) -> None:
        self._state = await self._store.reset(self._key)


class SessionBackend(Protocol):
    """What a session handle needs of its store: each change one call (SQLite: read, change,
    write under the session's lock; PostgreSQL: one atomic statement), the new state back."""

    async def record(
        self,
        key: Key,
        query: str,
        uris: Sequence[str],
        known: Iterable[str] = (),
        event: dict[str, Any] | None = None,
    ) -> SessionState:
        """`uris` recorded as seen; `known`: the seen list the handle holds (a store that does
        not read its log back hands back this list with `uris`); `event`: the search's payload
        in the timeline, logged with it (as `append(key, "search", event)`)."""

    async def mark(self, key: Key, which: str, uris: Sequence[str]) -> SessionState: ...

    async def set_defaults(self, key: Key, values: Mapping[str, Any]) -> SessionState: ...

    async def reset(self, key: Key) -> SessionState: ...

    async def append(self, key: Key, kind: str, payload: dict[str, Any]) -> None: ...


Opener = Callable[[str, str], Awaitable[StoredSession]]


async def open_following(opener: Opener, user_id: str, session_id: str, follow: bool) -> StoredSession:
    """The session `opener` gives for `session_id`; with `follow` (a transport's session), the
    research session it follows instead, if `session_start` made one current for it. Both
    stores open sessions this way."""
    session = await opener(user_id, session_id)
    current = session._state.current
    if follow and current:
        followed = await opener(user_id, current)
        followed.via = session_id
        return followed
    return session
