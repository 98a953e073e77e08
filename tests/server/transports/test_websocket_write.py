"""Who may write over WebSocket: the same scopes as HTTP, and a --no-auth server is read-only."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.server.auth.test_auth import SECRET, cli
from tests.server.transports.test_http_e2e import stop
from tests.server.transports.test_websocket import session, start_ws

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

WRITE_TOOLS = {"notes_create", "notes_update"}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One authenticating server (alice: a read-only and a write key) and one --no-auth server."""
    tmp = tmp_path_factory.mktemp("ws-write")
    data_dir = tmp / "data"
    read_key = cli(data_dir, "keys", "create", "--user", "alice").stdout.strip()
    write_key = cli(data_dir, "keys", "create", "--user", "alice", "--scope", "write").stdout.strip()
    env = {**os.environ, "KNOWLEDGE_MCP_JWT_SECRET": SECRET}
    process, url = start_ws(data_dir, tmp / "server.log", env)
    open_process, open_url = start_ws(tmp / "open", tmp / "open.log", dict(os.environ), "--no-auth")
    try:
        yield {"url": url, "open": open_url, "read": read_key, "write": write_key, "data_dir": data_dir}
    finally:
        stop(process)
        stop(open_process)


async def listed_and_called(url: str, headers: dict[str, str] | None) -> tuple[set[str], dict[str, Any]]:
    async with session(url, headers) as peer:
        tools = (await peer.request("tools/list"))["result"]["tools"]
        arguments = {"title": "Ws note", "content": "Written over a WebSocket."}
        reply = await peer.request("tools/call", {"name": "notes_create", "arguments": arguments})
    return {t["name"] for t in tools}, dict(reply["result"])


async def test_only_a_write_key_writes_over_websocket(servers: dict[str, Any]) -> None:
    read_names, refused = await listed_and_called(servers["url"], {"X-API-Key": servers["read"]})
    write_names, made = await listed_and_called(servers["url"], {"X-API-Key": servers["write"]})
    assert not read_names & WRITE_TOOLS and refused["isError"]
    assert "read-only" in refused["content"][0]["text"]
    assert write_names >= WRITE_TOOLS and not made.get("isError"), made
    assert (servers["data_dir"] / "users" / "alice" / "notes" / "Ws note.md").is_file()


async def test_a_no_auth_server_is_read_only(servers: dict[str, Any]) -> None:
    names, refused = await listed_and_called(servers["open"], None)
    assert "notes_search" in names and not names & WRITE_TOOLS
    assert refused["isError"] and "--no-auth server is read-only" in refused["content"][0]["text"]
