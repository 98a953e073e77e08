"""The change feed: listeners told of each change, in order, and unaffected by each other."""

from __future__ import annotations

import pytest

from knowledge_mcp.server.watch.events import Change, ChangeFeed

pytestmark = pytest.mark.anyio

ADDED = Change("local", "notes", added=("notes://a",))
UPDATED = Change("local", "notes", updated=("notes://b",))


async def test_every_listener_hears_each_change_in_order_plain_or_async() -> None:
    feed, heard, awaited = ChangeFeed(), [], []

    async def later(change: Change) -> None:
        awaited.append(change)

    feed.subscribe(heard.append)
    feed.subscribe(later)
    await feed.publish(ADDED)
    await feed.publish(UPDATED)
    assert heard == awaited == [ADDED, UPDATED]


async def test_a_failing_listener_does_not_keep_the_others_from_hearing() -> None:
    feed, heard = ChangeFeed(), []

    def broken(change: Change) -> None:
        raise RuntimeError("listener bug")

    feed.subscribe(broken)
    feed.subscribe(heard.append)
    await feed.publish(ADDED)
    assert heard == [ADDED]


async def test_an_unsubscribed_listener_and_an_empty_change_are_not_told() -> None:
    feed, heard = ChangeFeed(), []
    stop = feed.subscribe(heard.append)
    await feed.publish(Change("local", "notes"))
    stop()
    await feed.publish(ADDED)
    assert heard == []


def test_a_change_says_whether_the_list_of_items_changed() -> None:
    assert ADDED.list_changed and not UPDATED.list_changed
    assert Change("u", "media", removed=("media://x",)).list_changed
    assert UPDATED.uris == ("notes://b",)
