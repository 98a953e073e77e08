"""A write tells the writer's connected clients what changed (`resources/list_changed`, and
`resources/updated` for the uris they subscribed to), and no one else: in memory on both
protocol eras, and over HTTP with two users' API keys."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp_types import (
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
)

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.resources.notify import ItemChange
from tests.conftest import call
from tests.server.auth.test_auth import cli, start, stop

pytestmark = pytest.mark.anyio

WAIT_S = 10  # a bound on waiting for a notification, never a sleep


async def subscribe(client: Any, uri: str) -> None:
    """resources/subscribe, as a 2025-11-25 host sends it (deprecated only for 2026-07-28)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.session.subscribe_resource(uri)


class Inbox:
    """A client's message_handler: the server notifications it received, in order."""

    def __init__(self) -> None:
        self.received: list[Any] = []
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, Exception):
            return
        self.received.append(message)
        self._arrived.set()

    async def next_of(self, kind: type) -> Any:
        """The first notification of `kind` received (waiting for it, within WAIT_S)."""
        with anyio.fail_after(WAIT_S):
            while True:
                found = [m for m in self.received if isinstance(m, kind)]
                if found:
                    return found[0]
                self._arrived = anyio.Event()
                await self._arrived.wait()

    def kinds(self) -> list[str]:
        return [type(m).__name__ for m in self.received]


async def test_notes_create_sends_list_changed_to_the_writers_session(
    client_factory: Any, tmp_path: Path
) -> None:
    inbox = Inbox()
    client = client_factory(notes_dir=tmp_path / "vault")
    client.mode, client.message_handler = "legacy", inbox
    async with client:
        told = client.server_capabilities
        assert told.resources and told.resources.list_changed and told.resources.subscribe
        assert told.prompts and told.prompts.list_changed
        await call(client, "notes_create", title="Boiler", content="The boiler needs a service in May.")
        await inbox.next_of(ResourceListChangedNotification)


async def test_a_subscribed_uri_is_told_of_its_update_and_an_unsubscribed_one_is_not(
    client_factory: Any, tmp_path: Path
) -> None:
    inbox = Inbox()
    client = client_factory(notes_dir=tmp_path / "vault")
    client.mode, client.message_handler = "legacy", inbox
    async with client:
        first = await call(client, "notes_create", title="First", content="One.")
        second = await call(client, "notes_create", title="Second", content="Two.")
        await subscribe(client, first["uri"])
        await call(client, "notes_update", note_id=second["uri"], append="More two.")
        await call(client, "notes_update", note_id=first["uri"], append="More one.")
        updated = await inbox.next_of(ResourceUpdatedNotification)
    assert updated.params.uri == first["uri"]
    assert [m.params.uri for m in inbox.received if isinstance(m, ResourceUpdatedNotification)] == [
        first["uri"]
    ]


async def test_a_listen_stream_gets_the_list_change_and_the_update_of_its_uri(
    client_factory: Any, tmp_path: Path
) -> None:
    async with client_factory(notes_dir=tmp_path / "vault") as client:
        made = await call(client, "notes_create", title="Listened", content="Before.")
        async with client.listen(resources_list_changed=True, resource_subscriptions=[made["uri"]]) as sub:
            await call(client, "notes_update", note_id=made["uri"], append="After.")
            await call(client, "notes_create", title="Another", content="New.")
            events = []
            with anyio.fail_after(WAIT_S):
                async for event in sub:
                    events.append(event)
                    if isinstance(event, ResourcesListChanged):
                        break
    assert events == [ResourceUpdated(uri=made["uri"]), ResourcesListChanged()]


async def test_a_change_of_another_users_items_reaches_none_of_this_users_clients(data_dir: Path) -> None:
    """What the watcher publishes: another user's change tells no one here; a changed prompt
    of this user's also says their prompt library changed."""
    inbox = Inbox()
    mcp, host = build_server(Settings(data_dir=data_dir))
    try:
        async with Client(mcp, mode="legacy", message_handler=inbox) as client:
            await client.list_tools()  # the connection is known once it has asked something
            await host.notifier.publish(ItemChange("someone-else", "notes", added=("notes://x",)))
            await host.notifier.publish(ItemChange("local", "prompts", updated=("prompts://p",)))
            await inbox.next_of(PromptListChangedNotification)
    finally:
        await host.pool.close()
    assert inbox.kinds() == ["PromptListChangedNotification"]


@pytest.fixture(scope="module")
def two_users(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """An authenticated HTTP server; alice and bob each hold an API key that may write."""
    tmp = tmp_path_factory.mktemp("notify")
    data_dir = tmp / "data"
    keys = {
        user: cli(data_dir, "keys", "create", "--user", user, "--scope", "write").stdout.strip()
        for user in ("alice", "bob")
    }
    process, url = start(data_dir, tmp / "server.log", {**os.environ})
    try:
        yield {"url": url, **keys}
    finally:
        stop(process)


async def _open(url: str, key: str, inbox: Inbox, mode: str) -> Any:
    http = httpx2.AsyncClient(headers={"X-API-Key": key}, timeout=30)
    return http, Client(streamable_http_client(url, http_client=http), mode=mode, message_handler=inbox)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_over_http_a_write_tells_the_writers_session_and_not_another_users(
    two_users: dict[str, str], mode: str
) -> None:
    alice_inbox, bob_inbox = Inbox(), Inbox()
    a_http, alice = await _open(two_users["url"], two_users["alice"], alice_inbox, mode)
    b_http, bob = await _open(two_users["url"], two_users["bob"], bob_inbox, mode)
    async with a_http, b_http, alice, bob:
        if mode == "auto":
            await _listen_and_write(alice, bob, alice_inbox, bob_inbox)
        else:
            await _subscribe_and_write(alice, bob, alice_inbox, bob_inbox)


async def _subscribe_and_write(alice: Any, bob: Any, alice_inbox: Inbox, bob_inbox: Inbox) -> None:
    await bob.list_tools()
    made = await call(alice, "notes_create", title="Alice plans", content="Alice's garden plan.")
    await alice_inbox.next_of(ResourceListChangedNotification)
    await subscribe(bob, made["uri"])  # bob guesses alice's uri: he is told nothing
    await call(alice, "notes_update", note_id=made["uri"], append="Tomatoes.")
    await call(bob, "notes_create", title="Bob plans", content="Bob's shed plan.")
    await bob_inbox.next_of(ResourceListChangedNotification)
    assert bob_inbox.kinds() == ["ResourceListChangedNotification"]


async def _listen_and_write(alice: Any, bob: Any, alice_inbox: Inbox, bob_inbox: Inbox) -> None:
    made = await call(alice, "notes_create", title="Alice plans", content="Alice's garden plan.")
    async with (
        alice.listen(resources_list_changed=True, resource_subscriptions=[made["uri"]]) as a_sub,
        bob.listen(resources_list_changed=True, resource_subscriptions=[made["uri"]]),
    ):
        await call(alice, "notes_update", note_id=made["uri"], append="Tomatoes.")
        with anyio.fail_after(WAIT_S):
            assert await anext(aiter(a_sub)) == ResourceUpdated(uri=made["uri"])
        await call(bob, "notes_create", title="Bob plans", content="Bob's shed plan.")
        await bob_inbox.next_of(ResourceListChangedNotification)
    assert bob_inbox.kinds() == ["ResourceListChangedNotification"]
    assert "ResourceUpdatedNotification" in alice_inbox.kinds()
