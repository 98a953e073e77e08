"""The session store's contract, held by both backends (SQLite per user, PostgreSQL shared)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import anyio
import pytest

from knowledge_mcp.server.sessions.state import SEEN_LIMIT, SEEN_LOG_LIMIT, SessionState

from .conftest import MakeStore

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def test_an_unknown_session_is_fresh_empty_state(make_store: MakeStore) -> None:
    session = await make_store().open("alice", "new")
    assert (list(session.seen), list(session.viewed), list(session.cited)) == ([], [], [])
    assert session.defaults == {} and list(session.recent_queries) == []


async def test_changes_are_seen_by_another_store_over_the_same_storage(make_store: MakeStore) -> None:
    session = await make_store().open("alice", "s1")
    await session.record_results("sourdough starter", ["notes://a", "media://b"])
    await session.mark_viewed("notes://a")
    await session.cite(["media://b"])
    await session.set_defaults({"snippet_length": 120, "order_by": "recent"})
    again = await make_store().open("alice", "s1")
    assert list(again.seen) == ["notes://a", "media://b"]
    assert list(again.viewed) == ["notes://a"] and list(again.cited) == ["media://b"]
    assert list(again.recent_queries) == ["sourdough starter"]
    assert again.defaults == {"snippet_length": 120, "order_by": "recent"}


async def test_seen_moves_a_reseen_uri_to_the_end_and_stays_bounded(make_store: MakeStore) -> None:
    session = await make_store().open("alice", "big")
    await session.record_results("a", [f"notes://{n}" for n in range(SEEN_LIMIT + 10)])
    await session.record_results("b", ["notes://10", "notes://10", "notes://new"])
    seen = list((await make_store().open("alice", "big")).seen)
    assert len(seen) == SEEN_LIMIT
    assert seen[0] == "notes://12" and seen[-2:] == ["notes://10", "notes://new"]


async def test_seen_after_many_searches_reads_back_as_the_bounded_list_in_order(
    make_store: MakeStore,
) -> None:
    expected = SessionState(expires_at=datetime(2026, 3, 1, tzinfo=UTC))
    store = make_store()
    for n in range(3 * SEEN_LOG_LIMIT // 250):  # past the log's limit, so it is folded on the way
        uris = [f"notes://{(n * 97 + k * 13) % 7000}" for k in range(250)]  # re-seen ones among them
        session = await store.open("alice", "long")
        await session.record_results(f"q{n}", uris)
        expected.record_results(f"q{n}", uris)
        assert list(session.seen) == list(expected.seen)  # the handle's own state after the search
        if n % 20 == 19:
            reopened = await make_store().open("alice", "long")
            assert list(reopened.seen) == list(expected.seen)
    assert list((await make_store().open("alice", "long")).seen) == list(expected.seen)


async def test_seen_after_many_small_searches_reads_back_in_order(make_store: MakeStore) -> None:
    expected = SessionState(expires_at=datetime(2026, 3, 1, tzinfo=UTC))
    store = make_store()
    for n in range(150):  # many rows of a few URIs (PostgreSQL folds its log past 64 searches)
        uris = [f"notes://{(n * 7 + k) % 300}" for k in range(3)]
        await (await store.open("alice", "small")).record_results(f"q{n}", uris)
        expected.record_results(f"q{n}", uris)
    assert list((await make_store().open("alice", "small")).seen) == list(expected.seen)


async def test_recent_queries_keep_the_last_fifty_and_skip_blank_ones(make_store: MakeStore) -> None:
    session = await make_store().open("alice", "q")
    for n in range(55):
        await session.record_results(f"  query {n} ", [])
    await session.record_results("   ", ["notes://x"])
    queries = list((await make_store().open("alice", "q")).recent_queries)
    assert len(queries) == 50 and queries[0] == "query 5" and queries[-1] == "query 54"


async def test_one_users_session_is_invisible_to_another(make_store: MakeStore) -> None:
    store = make_store()
    await (await store.open("alice", "same-id")).cite(["notes://secret"])
    bob = await store.open("bob", "same-id")
    assert list(bob.cited) == []
    await bob.record_results("q", ["notes://bobs"])
    assert list((await make_store().open("alice", "same-id")).seen) == []


async def test_an_idle_session_expires_after_the_ttl_and_activity_extends_it(make_store: MakeStore) -> None:
    clock = Clock()
    store = make_store(ttl=timedelta(minutes=60), now=clock)
    await (await store.open("alice", "s")).record_results("first", ["notes://1"])
    clock.now += timedelta(minutes=50)
    assert list((await store.open("alice", "s")).seen) == ["notes://1"]  # opening is activity
    clock.now += timedelta(minutes=50)
    assert list((await store.open("alice", "s")).seen) == ["notes://1"]
    clock.now += timedelta(minutes=61)
    assert list((await store.open("alice", "s")).seen) == []
    later = make_store(now=clock)
    expired = await later.open("alice", "s")
    assert list(expired.seen) == [] and list(expired.recent_queries) == []
    await expired.cite(["notes://2"])  # a change to an expired session starts from nothing
    fresh = await make_store(now=clock).open("alice", "s")
    assert list(fresh.seen) == [] and list(fresh.cited) == ["notes://2"]


async def test_reset_forgets_the_state_and_an_unnamed_timeline(make_store: MakeStore) -> None:
    store = make_store()
    session = await store.open("alice", "r")
    await session.record_results("q", ["notes://1"])
    await session.note("a finding")
    await session.reset()
    assert list(session.seen) == []
    again = await make_store().open("alice", "r")
    assert list(again.seen) == [] and list(again.recent_queries) == []
    assert await (await store.timeline("alice")).events("r") == []


async def test_a_research_session_keeps_its_timeline_in_order_per_user(make_store: MakeStore) -> None:
    store = make_store()
    kept = await store.timeline("alice")
    await kept.create("research-1", "hydration", "2026-03-01T12:00:00.000000+00:00")
    session = await store.open("alice", "research-1")
    await session.record_results("hydration", ["notes://a"])
    await session.note("70 % works")
    await session.cite(["notes://a"], [{"uri": "notes://a", "claim": "c"}])
    await session.reset()  # a named session keeps its timeline
    events = await (await make_store().timeline("alice")).events("research-1")
    assert [e.kind for e in events] == ["search", "note", "cite"]
    assert events[1].payload == {"text": "70 % works"}
    assert [e.kind for e in await kept.events("research-1", "cite")] == ["cite"]
    assert await kept.named("hydration") == "research-1"
    listed = await kept.listed(10)
    assert [(r.name, r.searches, r.notes, r.citations) for r in listed] == [("hydration", 1, 1, 1)]
    bobs = await store.timeline("bob")
    assert await bobs.named("hydration") is None and await bobs.events("research-1") == []


async def test_a_transport_session_follows_its_current_research_session(make_store: MakeStore) -> None:
    store = make_store()
    await store.follow("alice", "conn-1", "research-9")
    followed = await make_store().open("alice", "conn-1", follow=True)
    assert followed.session_id == "research-9" and followed.via == "conn-1"
    assert (await store.open("alice", "conn-1")).session_id == "conn-1"


async def test_concurrent_changes_of_one_session_lose_nothing(make_store: MakeStore) -> None:
    store = make_store()  # across processes only PostgreSQL holds: test_two_processes.py
    handles = [await store.open("alice", "busy") for _ in range(2)]
    async with anyio.create_task_group() as tg:
        for n in range(60):
            tg.start_soon(handles[n % 2].record_results, f"q{n}", [f"notes://{n}"])
    reopened = await make_store().open("alice", "busy")
    assert sorted(reopened.seen) == sorted(f"notes://{n}" for n in range(60))
    assert len(reopened.recent_queries) == 50
