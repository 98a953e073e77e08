"""Sessions (DESIGN §8): keys, persistence, expiry, cache, isolation, concurrency, tools, defaults."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from knowledge_mcp.server.app import Services, build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.context import DatabasePool
from knowledge_mcp.server.sessions.store import SEEN_LIMIT, SEEN_LOG_LIMIT, SessionStore
from knowledge_mcp.server.sessions.transport import (
    PROCESS_SESSION_ID,
    SESSION_ENV,
    EndSessionOnDelete,
    transport_session_id,
)
from tests.conftest import FIXTURES, ROOT, import_into
from tests.server.transports.test_http_e2e import free_port, serve_command, stop, wait_until_healthy

pytestmark = pytest.mark.anyio

Make = Callable[..., tuple[Client, Services]]


@pytest.fixture
async def make_server(data_dir: Path) -> AsyncIterator[Make]:
    """Build real servers over `data_dir` (as `client_factory` does) and keep their hosts at hand."""
    hosts: list[Services] = []

    def make(**settings: Any) -> tuple[Client, Services]:
        mcp, host = build_server(Settings(data_dir=data_dir, **settings))
        hosts.append(host)
        return Client(mcp), host

    yield make
    for host in hosts:
        await host.pool.close()


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def pool() -> AsyncIterator[DatabasePool]:
    pool = DatabasePool()
    yield pool
    await pool.close()


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def error_of(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return " ".join(getattr(c, "text", "") for c in result.content)


# Keys and precedence


async def test_without_session_id_the_in_memory_transport_uses_the_process_session(make_server: Make) -> None:
    client, _ = make_server()
    async with client:
        await call(client, "session_cite", uris=["notes://a"])
        info = await call(client, "session_info")
        explicit = await call(client, "session_info", session_id="research-1")
    assert info["session_id"] == PROCESS_SESSION_ID
    assert info["cited"] == ["notes://a"]
    assert explicit["session_id"] == "research-1" and explicit["cited"] == []


async def test_an_explicit_session_id_wins_over_the_transport_session(make_server: Make) -> None:
    client, _ = make_server()
    async with client:
        await call(client, "session_cite", uris=["notes://x"], session_id="mine")
        assert (await call(client, "session_info", session_id="mine"))["cited"] == ["notes://x"]
        assert (await call(client, "session_info"))["cited"] == []


async def test_knowledge_mcp_session_names_the_stdio_session(
    make_server: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SESSION_ENV, "desk:notebook-7")
    client, _ = make_server()
    async with client:
        await call(client, "session_cite", uris=["media://m1"])
        info = await call(client, "session_info", session_id="desk:notebook-7")
    assert info["cited"] == ["media://m1"]


def test_the_mcp_session_id_header_is_the_http_session_and_no_header_is_none() -> None:
    def request(headers: dict[str, str] | None) -> Any:
        return SimpleNamespace(request=None if headers is None else SimpleNamespace(headers=headers))

    assert transport_session_id(request({"mcp-session-id": "abc123"}), "proc") == "abc123"
    assert transport_session_id(request({}), "proc") is None  # stateless HTTP (2026-07-28)
    assert transport_session_id(request(None), "proc") == "proc"  # stdio / in-memory


@pytest.mark.parametrize("bad", ["", "x" * 129, "has space", "semi;colon", "ü"])
async def test_an_invalid_session_id_is_a_tool_error_naming_session_id(make_server: Make, bad: str) -> None:
    client, _ = make_server()
    async with client:
        message = await error_of(client, "session_info", session_id=bad)
        assert "session_id" in message
        assert (await call(client, "session_info"))["seen"] == []  # the server keeps serving


async def test_without_any_session_the_tools_ask_for_a_session_id(
    make_server: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("knowledge_mcp.server.call.transport_session_id", lambda request, process_id: None)
    client, _ = make_server()
    async with client:
        for tool, args in [("session_info", {}), ("session_cite", {"uris": ["notes://a"]})]:
            message = await error_of(client, tool, **args)
            assert "pass session_id" in message
        assert (await call(client, "session_info", session_id="s"))["session_id"] == "s"


async def test_client_name_is_the_clients_declared_name(make_server: Make) -> None:
    _, host = make_server()
    request = SimpleNamespace(
        session=SimpleNamespace(client_params=SimpleNamespace(client_info=SimpleNamespace(name="ChatGPT"))),
        request=None,
    )
    assert host.context(request).client_id == "ChatGPT"  # type: ignore[arg-type]


# Persistence, expiry, cache, isolation, concurrency


async def test_session_state_survives_a_server_restart(make_server: Make, data_dir: Path) -> None:
    first, _ = make_server()
    async with first:
        await call(first, "session_cite", uris=["notes://kept"], session_id="long-haul")
        await call(first, "session_set_defaults", session_id="long-haul", snippet_length=120)
    second, _ = make_server()  # a new host (new cache) over the same data dir
    async with second:
        info = await call(second, "session_info", session_id="long-haul")
    assert info["cited"] == ["notes://kept"]
    assert info["defaults"]["snippet_length"] == 120
    assert (data_dir / "users" / "local" / "sessions.db").is_file()


async def test_an_idle_session_expires_after_the_ttl_and_activity_extends_it(
    data_dir: Path, pool: DatabasePool
) -> None:
    clock = Clock()
    store = SessionStore(data_dir, pool, ttl=timedelta(minutes=60), now=clock)
    session = await store.open("local", "s")
    await session.record_results("first", ["notes://1"])
    clock.now += timedelta(minutes=50)
    assert list((await store.open("local", "s")).seen) == ["notes://1"]  # opening is activity
    clock.now += timedelta(minutes=50)
    assert list((await store.open("local", "s")).seen) == ["notes://1"]
    clock.now += timedelta(minutes=61)
    fresh = await store.open("local", "s")
    assert list(fresh.seen) == [] and list(fresh.recent_queries) == []
    later = SessionStore(data_dir, pool, now=clock)  # and not resurrected from SQLite either
    assert list((await later.open("local", "s")).seen) == []


async def test_a_cache_smaller_than_the_sessions_still_answers_from_sqlite(
    data_dir: Path, pool: DatabasePool
) -> None:
    store = SessionStore(data_dir, pool, cache_size=2)
    for n in range(3):
        await (await store.open("local", f"s{n}")).record_results(f"query {n}", [f"notes://{n}"])
    for n in range(3):
        session = await store.open("local", f"s{n}")
        assert list(session.seen) == [f"notes://{n}"]
        assert list(session.recent_queries) == [f"query {n}"]
        await session.mark_viewed(f"notes://{n}")
    for n in range(3):
        assert list((await store.open("local", f"s{n}")).viewed) == [f"notes://{n}"]


async def test_one_users_session_is_invisible_to_another(make_server: Make, data_dir: Path) -> None:
    alice, _ = make_server(user="alice")
    bob, _ = make_server(user="bob")
    async with alice, bob:
        await call(alice, "session_cite", uris=["notes://secret"], session_id="shared-name")
        await call(alice, "session_set_defaults", session_id="shared-name", order_by="recent")
        seen_by_bob = await call(bob, "session_info", session_id="shared-name")
        assert (await call(alice, "session_info", session_id="shared-name"))["cited"] == ["notes://secret"]
    assert seen_by_bob["cited"] == [] and seen_by_bob["defaults"]["order_by"] == "relevance"
    assert (data_dir / "users" / "alice" / "sessions.db").is_file()


async def test_concurrent_calls_of_one_session_lose_nothing(data_dir: Path, pool: DatabasePool) -> None:
    store = SessionStore(data_dir, pool)
    handles = [await store.open("local", "busy") for _ in range(2)]
    async with anyio.create_task_group() as tg:
        for n in range(50):
            tg.start_soon(handles[n % 2].record_results, f"q{n}", [f"notes://{n}"])
    reopened = await SessionStore(data_dir, pool).open("local", "busy")  # straight from SQLite
    assert sorted(reopened.seen) == sorted(f"notes://{n}" for n in range(50))
    assert len(reopened.recent_queries) == 50


async def test_seen_is_ordered_deduplicated_and_bounded(data_dir: Path, pool: DatabasePool) -> None:
    session = await SessionStore(data_dir, pool).open("local", "big")
    await session.record_results("a", [f"notes://{n}" for n in range(SEEN_LIMIT + 10)])
    await session.record_results("b", ["notes://10"])
    assert len(session.seen) == SEEN_LIMIT
    assert session.seen[0] == "notes://11" and session.seen[-1] == "notes://10"


async def test_a_search_appends_its_uris_to_the_seen_log_and_leaves_earlier_rows_alone(
    data_dir: Path, pool: DatabasePool
) -> None:
    store = SessionStore(data_dir, pool)
    session = await store.open("local", "log")
    await session.record_results("a", [f"notes://{n}" for n in range(SEEN_LIMIT)])
    db = await store.database("local")
    before = [tuple(r) for r in await db.fetchall("SELECT seq, uris FROM session_seen")]
    await session.record_results("b", ["notes://3", "notes://new"])
    after = [tuple(r) for r in await db.fetchall("SELECT seq, uris FROM session_seen")]
    assert after[:-1] == before and json.loads(after[-1][1]) == ["notes://3", "notes://new"]
    assert list((await SessionStore(data_dir, pool).open("local", "log")).seen)[-2:] == [
        "notes://3",
        "notes://new",
    ]


async def test_the_seen_log_is_folded_into_one_row_once_it_outgrows_its_limit(
    data_dir: Path, pool: DatabasePool
) -> None:
    store = SessionStore(data_dir, pool)
    session = await store.open("local", "fold")
    for n in range(SEEN_LOG_LIMIT // 1000 + 1):
        await session.record_results(f"q{n}", [f"notes://{n}-{k}" for k in range(1000)])
    db = await store.database("local")
    rows = await db.fetchall("SELECT uris FROM session_seen")
    assert len(rows) == 1 and json.loads(rows[0][0]) == list(session.seen)
    assert len(session.seen) == SEEN_LIMIT and session.seen[-1] == f"notes://{SEEN_LOG_LIMIT // 1000}-999"


async def test_a_search_s_seen_batch_and_timeline_event_are_one_statement(
    data_dir: Path, pool: DatabasePool, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore(data_dir, pool)
    session = await store.open("local", "one")
    db = await store.database("local")
    writes: list[str] = []
    original = type(db).write

    async def write(self: Any, sql: str, params: Any = ()) -> None:
        writes.append(sql)
        await original(self, sql, params)

    monkeypatch.setattr(type(db), "write", write)
    await session.record_results("levain", ["notes://a", "notes://b"])
    assert len(writes) == 1
    events = await (await store.timeline("local")).events("one")
    assert [(e.kind, e.payload) for e in events] == [
        ("search", {"query": "levain", "uris": ["notes://a", "notes://b"], "count": 2})
    ]
    rows = await db.fetchall("SELECT uris FROM session_seen WHERE session_id = 'one'")
    assert [json.loads(r[0]) for r in rows] == [["notes://a", "notes://b"]]
    assert list((await SessionStore(data_dir, pool).open("local", "one")).recent_queries) == ["levain"]


async def test_ending_a_session_drops_its_seen_log(data_dir: Path, pool: DatabasePool) -> None:
    store = SessionStore(data_dir, pool)
    await (await store.open("local", "gone")).record_results("q", ["notes://1"])
    await (await store.open("local", "kept")).record_results("q", ["notes://2"])
    await store.end("local", "gone")
    db = await store.database("local")
    assert [r[0] for r in await db.fetchall("SELECT uris FROM session_seen")] == ['["notes://2"]']


# The session tools


async def test_session_tools_cite_set_defaults_and_reset(make_server: Make) -> None:
    client, _ = make_server()
    async with client:
        cited = await call(client, "session_cite", uris=["notes://a", "chats://c", "notes://a"])
        assert cited["cited"] == ["chats://c", "notes://a"]
        updated = await call(
            client, "session_set_defaults", snippet_length=10, max_tokens=900, order_by="recent"
        )
        assert updated["defaults"] == {
            "snippet_length": 50,
            "max_tokens": 900,
            "sibling_window": 2,
            "order_by": "recent",
        }  # no chars_per_token: budgets count real cl100k tokens unless one is set
        assert any("snippet_length 10" in w and "50..1000" in w for w in updated["warnings"])
        info = await call(client, "session_info")
        assert info["defaults"]["order_by"] == "recent" and info["expires_at"]
        reset = await call(client, "session_reset")
        assert reset["cited"] == [] and reset["defaults"]["order_by"] == "relevance"


async def test_session_tool_errors_name_the_field(make_server: Make) -> None:
    client, _ = make_server()
    async with client:
        assert "order_by" in await error_of(client, "session_set_defaults", order_by="oldest")
        assert "uris" in await error_of(client, "session_cite", uris=["not-a-uri"])
        assert "uris" in await error_of(client, "session_cite", uris=["bogus://1"])
        assert "uris" in await error_of(client, "session_cite", uris=[])


async def test_only_session_info_is_read_only(make_server: Make) -> None:
    client, _ = make_server()
    async with client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in ("session_info", "session_cite", "session_set_defaults", "session_reset"):
        assert tools[name].title and tools[name].output_schema
        assert tools[name].annotations is not None
        assert tools[name].annotations.read_only_hint is (name == "session_info")
    assert tools["session_reset"].annotations.destructive_hint is True  # type: ignore[union-attr]


async def test_session_defaults_apply_to_searches_and_explicit_input_wins(
    make_server: Make, data_dir: Path
) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    client, _ = make_server()
    async with client:
        plain = await call(client, "notes_search", query="sourdough")
        assert plain["results"] and max(len(r["snippet"]) for r in plain["results"]) > 80
        await call(client, "session_set_defaults", snippet_length=80)
        short = await call(client, "notes_search", query="sourdough")
        assert short["results"] and all(len(r["snippet"]) <= 80 for r in short["results"])
        explicit = await call(client, "notes_search", query="sourdough", snippet_length=400)
        assert max(len(r["snippet"]) for r in explicit["results"]) > 80
        other = await call(client, "session_info", session_id="elsewhere")
        assert other["defaults"]["snippet_length"] == 300  # config default in another session


# HTTP DELETE


async def test_http_delete_with_the_session_header_drops_the_sessions_state(
    data_dir: Path, pool: DatabasePool
) -> None:
    store = SessionStore(data_dir, pool)
    await (await store.open("local", "abc")).record_results("q", ["notes://1"])
    await (await store.open("local", "keep")).record_results("q", ["notes://2"])

    async def sdk(scope: Any, receive: Any, send: Any) -> None:
        status = 200 if scope["method"] == "DELETE" else 405
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    app = EndSessionOnDelete(sdk, store, user_of=lambda scope: "local")

    async def noop_send(message: Any) -> None:
        return None

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": "DELETE", "path": "/mcp", "headers": [(b"mcp-session-id", b"abc")]}
    await app(scope, receive, noop_send)
    assert list((await SessionStore(data_dir, pool).open("local", "abc")).seen) == []
    assert list((await SessionStore(data_dir, pool).open("local", "keep")).seen) == ["notes://2"]


@pytest.mark.slow
def test_over_real_http_the_header_keys_the_session_delete_ends_it_and_stateless_has_none(
    tmp_path: Path,
) -> None:
    """2025-11-25 streamable HTTP: Mcp-Session-Id is the session and DELETE forgets it;
    a 2026-07-28 stateless request has no transport session."""
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            serve_command(tmp_path / "data", "--no-auth", "--port", str(port)),
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    url = f"http://127.0.0.1:{port}/mcp"
    accept = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

    def rpc(http: httpx.Client, headers: dict[str, str], method: str, params: dict[str, Any]) -> Any:
        response = http.post(
            url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, headers=headers
        )
        lines = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return response, json.loads(lines[-1] if lines else response.text)

    def connect(http: httpx.Client) -> tuple[str, dict[str, str]]:
        info = {"name": "probe", "version": "1"}
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}
        response, _ = rpc(http, accept, "initialize", params)
        sid = response.headers["mcp-session-id"]
        headers = {**accept, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        return sid, headers

    def tool(http: httpx.Client, headers: dict[str, str], name: str, **arguments: Any) -> Any:
        return rpc(http, headers, "tools/call", {"name": name, "arguments": arguments})[1]["result"]

    try:
        wait_until_healthy(process, f"http://127.0.0.1:{port}/healthz", log)
        with httpx.Client(timeout=10) as http:
            sid, first = connect(http)
            cited = tool(http, first, "session_cite", uris=["notes://x"])["structuredContent"]
            assert cited["session_id"] == sid and cited["cited"] == ["notes://x"]
            _, second = connect(http)
            assert tool(http, second, "session_info", session_id=sid)["structuredContent"]["cited"] == [
                "notes://x"
            ]
            assert http.delete(url, headers=first).status_code == 200
            assert tool(http, second, "session_info", session_id=sid)["structuredContent"]["cited"] == []
            meta = {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            stateless = {**accept, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}
            _, body = rpc(
                http,
                {**stateless, "mcp-name": "session_info"},
                "tools/call",
                {"name": "session_info", "arguments": {}, "_meta": meta},
            )
            assert body["result"]["isError"] and "pass session_id" in body["result"]["content"][0]["text"]
    finally:
        stop(process)
