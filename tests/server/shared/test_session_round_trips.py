"""A search's session writes on PostgreSQL are one round trip (the seen URIs, the recent query and
the timeline event together), opening a session is one, and the timeline's bound holds as on
SQLite. Round trips are counted (psycopg cursor executes: a pipeline's statements would each
count), never timed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import psycopg
import pytest

from knowledge_mcp.server.postgres import timeline as pg_timeline
from knowledge_mcp.server.postgres.sessions import PgSessionStore
from knowledge_mcp.server.postgres.state import SharedState
from knowledge_mcp.server.sessions import timeline

from .conftest import MakeStore

pytestmark = pytest.mark.anyio


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement, or batch of statements sent as one query, that reaches the server."""
    statements: list[str] = []
    original = psycopg.AsyncCursor.execute

    async def execute(self: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        statements.append(str(query))
        return await original(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.AsyncCursor, "execute", execute)
    yield statements


@pytest.fixture
async def states(pg_url: str) -> AsyncIterator[list[SharedState]]:
    """Two workers' shared state over the same database (two pools)."""
    made = [SharedState(pg_url, pool_size=4) for _ in range(2)]
    for state in made:
        await state.db()  # opened and migrated before anything is counted
    yield made
    for state in made:
        await state.close()


async def test_a_search_s_session_writes_are_one_round_trip_and_opening_is_one(
    states: list[SharedState], sent: list[str]
) -> None:
    store = PgSessionStore(states[0])
    await store.open("alice", "warm")  # the user's expired sessions purged (every 10 minutes)
    sent.clear()
    session = await store.open("alice", "s1")
    opened = len(sent)
    sent.clear()
    await session.record_results("hydration", ["notes://a", "media://b"])
    assert (opened, len(sent)) == (1, 1)
    again = await PgSessionStore(states[1]).open("alice", "s1")
    assert list(again.seen) == ["notes://a", "media://b"] and list(again.recent_queries) == ["hydration"]
    events = await (await store.timeline("alice")).events("s1")
    assert [(e.kind, e.payload) for e in events] == [
        ("search", {"query": "hydration", "uris": ["notes://a", "media://b"], "count": 2})
    ]


async def test_two_workers_recording_one_session_at_once_lose_no_uri_and_no_event(
    states: list[SharedState],
) -> None:
    stores = [PgSessionStore(state) for state in states]
    handles = [await store.open("alice", "busy") for store in stores]
    async with anyio.create_task_group() as tg:
        for n in range(40):
            tg.start_soon(handles[n % 2].record_results, f"q{n}", [f"notes://{n}"])
    reopened = await stores[0].open("alice", "busy")
    assert sorted(reopened.seen) == sorted(f"notes://{n}" for n in range(40))
    events = await (await stores[1].timeline("alice")).events("busy")
    assert sorted(e.payload["query"] for e in events) == sorted(f"q{n}" for n in range(40))
    assert await (await stores[1].timeline("bob")).events("busy") == []


@pytest.fixture
def limit_of_five(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeline, "EVENT_LIMIT", 5)
    monkeypatch.setattr(pg_timeline, "EVENT_LIMIT", 5)


@pytest.mark.usefixtures("limit_of_five")
async def test_the_timeline_is_bounded_and_keeps_citations_and_notes_in_both_stores(
    make_store: MakeStore,
) -> None:
    store = make_store()
    session = await store.open("alice", "busy")
    await session.cite(["notes://a"])
    await session.note("keep me")
    for n in range(6):
        await session.record_results(f"query {n}", [f"notes://{n}"])
    events = await (await store.timeline("alice")).events("busy")
    assert [e.kind for e in events] == ["cite", "note", "search", "search", "search"]
    assert [e.payload["query"] for e in events[2:]] == ["query 3", "query 4", "query 5"]


@pytest.mark.usefixtures("limit_of_five")
async def test_a_search_past_a_timeline_full_of_notes_is_not_kept_in_both_stores(
    make_store: MakeStore,
) -> None:
    store = make_store()
    session = await store.open("alice", "notes")
    for n in range(5):
        await session.note(f"note {n}")
    await session.record_results("one more", ["notes://x"])
    await session.note("note 5")
    events = await (await store.timeline("alice")).events("notes")
    assert [e.payload["text"] for e in events] == [f"note {n}" for n in range(6)]
    assert list((await make_store().open("alice", "notes")).seen) == ["notes://x"]
