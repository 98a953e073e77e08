"""WebSocket transport end to end: `serve --transport ws` as a subprocess, the `websockets` client.

Raw JSON-RPC frames on purpose: the test speaks the wire format a browser or any other
WebSocket client would, not our own code.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from knowledge_mcp.server.auth.tokens import mint_token
from knowledge_mcp.server.config import Settings
from tests.conftest import FIXTURES, ROOT
from tests.server.auth.test_auth import SECRET, alg_none_token, cli, import_user_notes, token
from tests.server.transports.test_http_e2e import free_port, serve_command, stop, wait_until_healthy

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

RECV_TIMEOUT_S = 60.0  # a bound so a broken server fails the test instead of hanging it


def start_ws(
    data_dir: Path, log: Path, env: dict[str, str], *extra: str
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = serve_command(data_dir, "--transport", "ws", "--host", "127.0.0.1", "--port", str(port), *extra)
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    health = wait_until_healthy(process, f"http://127.0.0.1:{port}/healthz", log)
    assert health["status"] == "ok"
    return process, f"ws://127.0.0.1:{port}/ws"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """alice: the fixture notes plus her own; bob: his own note. An HS256 secret, alice's API key."""
    tmp = tmp_path_factory.mktemp("ws")
    data_dir = tmp / "data"
    cli(data_dir, "import", "notes", str(FIXTURES / "notes"), "--user", "alice")
    import_user_notes(tmp, data_dir)
    key = cli(data_dir, "keys", "create", "--user", "alice").stdout.strip()
    env = {**os.environ, "KNOWLEDGE_MCP_JWT_SECRET": SECRET}
    log = tmp / "server.log"
    process, url = start_ws(data_dir, log, env)
    try:
        yield {"url": url, "key": key, "log": log, "process": process}
    finally:
        stop(process)


@pytest.fixture(scope="module")
def idle_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """--no-auth on loopback with a one-second idle timeout, from the environment."""
    tmp = tmp_path_factory.mktemp("ws-idle")
    env = {**os.environ, "KNOWLEDGE_MCP_WS_IDLE_TIMEOUT_S": "1"}
    process, url = start_ws(tmp / "data", tmp / "server.log", env, "--no-auth")
    try:
        yield url
    finally:
        stop(process)


def jwt_for(user: str) -> str:
    return mint_token(Settings(jwt_secret=SECRET), user, 300)


def b64(value: Any) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


@asynccontextmanager
async def ws_connect(
    url: str, headers: dict[str, str] | None = None, **kwargs: Any
) -> AsyncIterator[ClientConnection]:
    kwargs.setdefault("subprotocols", ["mcp"])
    async with connect(url, additional_headers=headers, proxy=None, open_timeout=30, **kwargs) as ws:
        yield ws


class Peer:
    """A JSON-RPC peer over one WebSocket: numbered requests, responses matched by id."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.next_id = 0

    async def frame(self) -> dict[str, Any]:
        return dict(json.loads(await self.ws.recv(decode=True)))

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.ws.send(json.dumps(message))
        while True:
            reply = await self.frame()
            if reply.get("id") == self.next_id:
                return reply

    async def initialize(self, **extra: Any) -> dict[str, Any]:
        params = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "ws-test", "version": "1"},
        }
        reply = await self.request("initialize", {**params, **extra})
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return reply

    async def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        reply = await self.request("tools/call", {"name": name, "arguments": arguments})
        result = dict(reply["result"])
        assert not result.get("isError"), result["content"][0]["text"]
        return result

    async def structured(self, name: str, **arguments: Any) -> dict[str, Any]:
        return dict((await self.tool(name, **arguments))["structuredContent"])


@asynccontextmanager
async def session(url: str, headers: dict[str, str] | None = None, **init: Any) -> AsyncIterator[Peer]:
    async with ws_connect(url, headers) as ws:
        peer = Peer(ws)
        reply = await peer.initialize(**init)
        assert reply["result"]["serverInfo"]["name"] == "knowledge-mcp"
        yield peer


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


def titles(structured: dict[str, Any]) -> list[str]:
    return [r["title"] for r in structured["results"]]


async def test_jwt_session_lists_tools_and_finds_the_users_notes(server: dict[str, Any]) -> None:
    async with session(server["url"], bearer(jwt_for("alice"))) as peer:
        assert peer.ws.subprotocol == "mcp"
        tools = {t["name"] for t in (await peer.request("tools/list"))["result"]["tools"]}
        assert {"notes_search", "knowledge_search", "session_info"} <= tools
        notes = await peer.structured("notes_search", query="field guide birds", limit=3)
        assert notes["results"] and "bird" in notes["results"][0]["title"].lower()
        everything = await peer.structured("knowledge_search", query="zanzibarite")
        assert titles(everything) == ["alice note"]
        assert everything["results"][0]["uri"].startswith("notes://")


@pytest.mark.parametrize("how", ["bearer", "x-api-key", "query"])
async def test_an_api_key_serves_its_user_over_every_carrier(server: dict[str, Any], how: str) -> None:
    key, url, headers = server["key"], server["url"], None
    if how == "bearer":
        headers = bearer(key)
    elif how == "x-api-key":
        headers = {"X-API-Key": key}
    else:
        url = f"{url}?token={key}"
    async with session(url, headers) as peer:
        assert titles(await peer.structured("notes_search", query="zanzibarite")) == ["alice note"]
        assert titles(await peer.structured("notes_search", query="quokkaberry")) == []


async def test_a_query_token_sees_only_its_own_users_notes(server: dict[str, Any]) -> None:
    async with session(f"{server['url']}?token={jwt_for('alice')}") as alice:
        assert titles(await alice.structured("knowledge_search", query="quokkaberry")) == []
        assert titles(await alice.structured("knowledge_search", query="zanzibarite")) == ["alice note"]
    async with session(f"{server['url']}?token={jwt_for('bob')}") as bob:
        assert titles(await bob.structured("knowledge_search", query="quokkaberry")) == ["bob note"]
        assert titles(await bob.structured("notes_search", query="field guide birds")) == []


@pytest.mark.parametrize(
    ("headers", "query"),
    [
        pytest.param({}, "", id="no-credentials"),
        pytest.param(
            bearer(token("alice", secret="not-the-configured-secret-at-all")), "", id="wrong-secret"
        ),
        pytest.param(bearer(alg_none_token("alice")), "", id="alg-none"),
        pytest.param(bearer(token("alice", ttl=-60)), "", id="expired"),
        pytest.param(bearer("km_not-a-real-key"), "", id="unknown-api-key"),
        pytest.param({"Authorization": "Basic YWxpY2U6cHc="}, "", id="not-bearer"),
        pytest.param({}, "?token=garbage", id="bad-query-token"),
        pytest.param({}, "?token=", id="empty-query-token"),
    ],
)
async def test_bad_or_missing_credentials_refuse_the_handshake_with_401(
    server: dict[str, Any], headers: dict[str, str], query: str
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with ws_connect(server["url"] + query, headers):
            pass
    assert refused.value.response.status_code == 401
    assert refused.value.response.headers["WWW-Authenticate"] == "Bearer"


async def test_a_bad_header_is_not_rescued_by_a_good_query_token(server: dict[str, Any]) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with ws_connect(f"{server['url']}?token={jwt_for('alice')}", bearer("nonsense")):
            pass
    assert refused.value.response.status_code == 401


@pytest.mark.parametrize("offered", [None, ["graphql-ws"]])
async def test_a_client_not_offering_the_mcp_subprotocol_is_refused(
    server: dict[str, Any], offered: list[str] | None
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with ws_connect(server["url"], bearer(jwt_for("alice")), subprotocols=offered):
            pass
    assert refused.value.response.status_code == 400
    assert b"mcp" in refused.value.response.body


async def test_a_foreign_origin_is_refused_on_a_loopback_server(server: dict[str, Any]) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with ws_connect(server["url"], bearer(jwt_for("alice")), origin="http://evil.example"):
            pass
    assert refused.value.response.status_code == 403
    async with ws_connect(server["url"], bearer(jwt_for("alice")), origin="http://localhost:3000") as ws:
        assert ws.subprotocol == "mcp"


async def test_a_binary_frame_closes_with_1003_and_the_server_keeps_serving(server: dict[str, Any]) -> None:
    async with session(server["url"], bearer(jwt_for("alice"))) as peer:
        await peer.ws.send(b'{"jsonrpc": "2.0", "id": 9, "method": "tools/list"}')
        with pytest.raises(ConnectionClosed) as closed:
            await peer.frame()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1003
    async with session(server["url"], bearer(jwt_for("alice"))) as peer:
        assert (await peer.request("tools/list"))["result"]["tools"]


async def test_garbage_frames_get_json_rpc_errors_and_the_connection_stays_usable(
    server: dict[str, Any],
) -> None:
    async with session(server["url"], bearer(jwt_for("alice"))) as peer:
        await peer.ws.send("this is not json")
        parse_error = await peer.frame()
        assert parse_error["error"]["code"] == -32700 and parse_error["id"] is None
        await peer.ws.send(json.dumps({"id": 41, "hello": "world"}))
        invalid = await peer.frame()
        assert invalid["error"]["code"] == -32600 and invalid["id"] == 41
        await peer.ws.send(json.dumps([{"jsonrpc": "2.0", "id": 42, "method": "tools/list"}]))  # no batches
        batch = await peer.frame()
        assert batch["error"]["code"] == -32600 and batch["id"] is None
        assert titles(await peer.structured("notes_search", query="zanzibarite")) == ["alice note"]


async def test_an_idle_connection_is_closed_with_1001(idle_server: str) -> None:
    async with session(idle_server) as peer:
        assert (await peer.request("tools/list"))["result"]["tools"]
        with pytest.raises(ConnectionClosed) as closed:
            with anyio.fail_after(RECV_TIMEOUT_S):
                await peer.frame()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        assert closed.value.rcvd.reason == "idle timeout"


async def test_a_connection_is_closed_with_1008_when_its_jwt_expires(server: dict[str, Any]) -> None:
    async with session(server["url"], bearer(mint_token(Settings(jwt_secret=SECRET), "alice", 6))) as peer:
        with pytest.raises(ConnectionClosed) as closed:
            with anyio.fail_after(RECV_TIMEOUT_S):
                while True:  # keep the connection busy: expiry, not idleness, must end it
                    await peer.request("tools/list")
                    await anyio.sleep(0.2)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


async def test_a_message_over_the_size_limit_closes_with_1009(server: dict[str, Any]) -> None:
    async with session(server["url"], bearer(jwt_for("alice"))) as peer:
        huge = json.dumps(
            {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"x": "a" * 5_000_000}}
        )
        await peer.ws.send(huge)
        with pytest.raises(ConnectionClosed) as closed:
            with anyio.fail_after(RECV_TIMEOUT_S):
                await peer.frame()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


async def test_two_connections_are_two_sessions_with_separate_seen_sets(server: dict[str, Any]) -> None:
    async with (
        session(server["url"], bearer(jwt_for("alice"))) as first,
        session(server["url"], bearer(jwt_for("alice"))) as second,
    ):
        a1 = [
            r["uri"]
            for r in (await first.structured("knowledge_search", query="migration", limit=2))["results"]
        ]
        a2 = [
            r["uri"]
            for r in (await first.structured("knowledge_search", query="migration", limit=2))["results"]
        ]
        assert len(a1) == 2 and not set(a1) & set(a2)  # the first connection hides what it saw
        b1 = [
            r["uri"]
            for r in (await second.structured("knowledge_search", query="migration", limit=2))["results"]
        ]
        assert b1 == a1  # the second connection has seen nothing yet
        info_a, info_b = await first.structured("session_info"), await second.structured("session_info")
        assert info_a["session_id"] != info_b["session_id"]
        assert info_a["session_id"].startswith("ws-") and info_b["session_id"].startswith("ws-")
        assert set(a1) | set(a2) <= set(info_a["seen"]) and not set(a2) & set(info_b["seen"])


async def test_config_in_initialize_sets_defaults_beneath_session_and_explicit_input(
    server: dict[str, Any],
) -> None:
    async with session(server["url"], bearer(jwt_for("alice")), config=b64({"snippet_length": 60})) as peer:
        assert (await peer.structured("session_info"))["defaults"]["snippet_length"] == 60
        found = await peer.structured("notes_search", query="migration", limit=5)
        assert found["results"] and all(len(r["snippet"]) <= 60 for r in found["results"])
        assert found.get("warnings", []) == []  # no warnings: the empty list is left out
        await peer.structured("session_set_defaults", snippet_length=80)  # session beats request config
        assert (await peer.structured("session_info"))["defaults"]["snippet_length"] == 80
        explicit = await peer.structured("notes_search", query="migration", limit=5, snippet_length=400)
        assert max(len(r["snippet"]) for r in explicit["results"]) > 80  # explicit input beats both
    async with session(server["url"], bearer(jwt_for("alice"))) as plain:
        found = await plain.structured("notes_search", query="migration", limit=5)
        assert max(len(r["snippet"]) for r in found["results"]) > 60  # only that connection had it


async def test_initialize_accepts_a_plain_object_and_overrides_the_url_config_key_by_key(
    server: dict[str, Any],
) -> None:
    url = f"{server['url']}?config={b64({'snippet_length': 100, 'max_tokens': 700})}"
    async with session(
        url, bearer(jwt_for("alice")), config={"snippet_length": 70, "order_by": "recent"}
    ) as peer:
        defaults = (await peer.structured("session_info"))["defaults"]
        assert (defaults["snippet_length"], defaults["max_tokens"], defaults["order_by"]) == (
            70,
            700,
            "recent",
        )


async def test_a_malformed_config_warns_in_the_next_tool_result_once(server: dict[str, Any]) -> None:
    url = f"{server['url']}?config={b64({'max_tokens': 10})}"
    async with session(url, bearer(jwt_for("alice")), config="%%% not base64 %%%") as peer:
        first = await peer.tool("notes_search", query="zanzibarite")
        warnings = first["structuredContent"]["warnings"]
        assert any(w.startswith("initialize config: not valid base64") for w in warnings), warnings
        assert any("max_tokens" in w and "50..32000" in w for w in warnings)
        assert "warning: initialize config" in first["content"][0]["text"]
        assert titles(first["structuredContent"]) == ["alice note"]  # never a failure
        assert (await peer.structured("session_info"))["defaults"]["max_tokens"] == 50  # clamped, applied
        again = await peer.structured("notes_search", query="zanzibarite")
        assert again.get("warnings", []) == []


async def test_a_config_cannot_change_who_the_user_is(server: dict[str, Any]) -> None:
    hostile = {"user_id": "bob", "user": "bob", "data_dir": "/tmp", "db_paths": {"notes": "/tmp/x.db"}}
    url = f"{server['url']}?config={b64(hostile)}"
    async with session(url, bearer(jwt_for("alice")), config=b64(hostile)) as peer:
        found = await peer.structured("knowledge_search", query="quokkaberry zanzibarite")
        assert titles(found) == ["alice note"] and not found.get("warnings")


async def test_ws_refuses_to_start_without_credentials_or_with_no_auth_off_loopback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KNOWLEDGE_MCP_JWT_SECRET"}
    runs = {
        "no credentials": serve_command(tmp_path / "a", "--transport", "ws", "--port", str(free_port())),
        "public host": serve_command(
            tmp_path / "b", "--transport", "ws", "--no-auth", "--host", "0.0.0.0", "--port", str(free_port())
        ),
    }
    for name, command in runs.items():
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
        assert done.returncode == 1, name
        assert "Traceback" not in done.stderr and done.stdout == ""
        assert ("jwt_secret" if name == "no credentials" else "loopback") in done.stderr


async def test_query_tokens_never_reach_the_log(server: dict[str, Any]) -> None:
    secret_token = jwt_for("alice")
    async with session(f"{server['url']}?token={secret_token}") as peer:
        await peer.structured("notes_search", query="zanzibarite")
    deadline = time.monotonic() + 10
    log = ""
    while time.monotonic() < deadline and "WebSocket /ws?…" not in log:  # wait for the line to be flushed
        log = server["log"].read_text(errors="replace")
        await anyio.sleep(0.1)
    assert "WebSocket /ws?…" in log
    assert secret_token not in log and server["key"] not in log and "zanzibarite" not in log
    assert "ERROR" not in log and "Traceback" not in log  # refused handshakes are not errors
