"""A search's session write held until its answer is written (`sessions/pending.py`), on both
backends: whatever reads the session next reads exactly what an awaited write would have left."""

from __future__ import annotations

import pytest

from .conftest import MakeStore

pytestmark = pytest.mark.anyio


async def test_a_held_write_waits_for_release_and_the_next_open_settles_it(make_store: MakeStore) -> None:
    store = make_store()
    async with store.pending.held():
        session = await store.open("alice", "s1")
        await session.record_results("sourdough starter", ["notes://a", "media://b"])
        assert list(session.seen) == ["notes://a", "media://b"]  # the handle knows at once
        assert list((await make_store().open("alice", "s1")).seen) == []  # the store not yet
        again = await store.open("alice", "s1")  # the next call settles the held write first
        assert list(again.seen) == ["notes://a", "media://b"]
        assert list(again.recent_queries) == ["sourdough starter"]
        assert list((await make_store().open("alice", "s1")).seen) == ["notes://a", "media://b"]


async def test_a_burst_of_released_searches_leaves_every_one_in_seen_and_the_timeline(
    make_store: MakeStore,
) -> None:
    store = make_store()
    async with store.pending.held() as answered:
        for n in range(20):
            session = await store.open("alice", "burst")
            await session.record_results(f"query {n}", [f"notes://{n}", f"notes://{n + 1}"])
            answered()  # the answer is out; its write runs while the next call comes in
        kept = await store.timeline("alice")
        searches = await kept.events("burst", "search")
    assert [e.payload["query"] for e in searches] == [f"query {n}" for n in range(20)]
    reopened = await make_store().open("alice", "burst")
    assert list(reopened.seen) == [f"notes://{n}" for n in range(21)]
    assert list(reopened.recent_queries)[-3:] == ["query 17", "query 18", "query 19"]


async def test_leaving_the_held_block_loses_no_pending_write(make_store: MakeStore) -> None:
    store = make_store()
    async with store.pending.held():
        for name in ("s1", "s2"):
            session = await store.open("alice", name)
            await session.record_results("never released", [f"notes://{name}"])
    for name in ("s1", "s2"):
        assert list((await make_store().open("alice", name)).seen) == [f"notes://{name}"]


async def test_a_change_after_a_held_search_lands_after_it(make_store: MakeStore) -> None:
    store = make_store()
    async with store.pending.held():
        session = await store.open("alice", "s1")
        await session.record_results("first", ["notes://a"])
        await session.mark_viewed("notes://a")  # settles the search's write, then its own
        await session.reset()
        await session.record_results("after reset", ["notes://b"])
    reopened = await make_store().open("alice", "s1")
    assert list(reopened.seen) == ["notes://b"] and list(reopened.viewed) == []
    assert list(reopened.recent_queries) == ["after reset"]


async def test_without_a_held_block_a_search_writes_before_it_returns(make_store: MakeStore) -> None:
    session = await make_store().open("alice", "s1")
    await session.record_results("sourdough", ["notes://a"])
    assert list((await make_store().open("alice", "s1")).seen) == ["notes://a"]
