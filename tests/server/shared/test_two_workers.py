"""Two workers behind one port, sharing state in PostgreSQL (a real server subprocess, real
clients): a session started on one worker is honoured on the other, a rate limit holds across
both, and alice never sees bob's items or session. Each HTTP response names the worker that
answered (`X-Knowledge-Worker`); clients open a new connection per request, so the kernel deals
requests to both workers."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import SecretStr

from knowledge_mcp.server.auth.tokens import mint_token
from knowledge_mcp.server.config import Settings
from tests.conftest import FIXTURES, ROOT, import_into
from tests.postgres import fresh_database
from tests.server.transports.test_http_e2e import free_port, serve_command, stop

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REFUSED_CALLS = 12
"""Calls past the limit: all on one worker by chance is 1 in 2**(limit + 12)."""
SEARCH_LIMIT = 4  # notes_search calls a minute per user
START_S = 180.0


@dataclass
class Workers:
    url: str
    tokens: dict[str, str]


@pytest.fixture(scope="module")
def database(pg_server: str) -> Iterator[str]:
    with fresh_database(pg_server) as url:
        yield url


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory, database: str) -> Iterator[Workers]:
    folder = tmp_path_factory.mktemp("workers")
    data_dir = folder / "data"
    anyio.run(lambda: import_into(data_dir, "notes", FIXTURES / "notes" / "recipes", user="alice"))
    anyio.run(lambda: import_into(data_dir, "notes", FIXTURES / "notes" / "work", user="bob"))
    secret = uuid.uuid4().hex
    env = {
        "KNOWLEDGE_MCP_JWT_SECRET": secret,
        "KNOWLEDGE_MCP_DATABASE_URL": database,
        "KNOWLEDGE_MCP_RATE_LIMITS": json.dumps({"notes_search": SEARCH_LIMIT}),
        "KNOWLEDGE_MCP_EMBED_IN_BACKGROUND": "false",
    }
    port = free_port()
    log = folder / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            serve_command(data_dir, "--port", str(port), "--workers", "2"),
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, **env},
        )
    try:
        healthy(process, f"http://127.0.0.1:{port}/healthz", log)
        settings = Settings(jwt_secret=SecretStr(secret))
        tokens = {user: mint_token(settings, user, 3600) for user in ("alice", "bob")}
        yield Workers(f"http://127.0.0.1:{port}/mcp", tokens)
        assert secret not in log.read_text(errors="replace") and "postgresql://" not in log.read_text()
    finally:
        stop(process)


def healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Both workers answering /healthz (each imports the whole server: slow on a busy machine)."""
    seen: set[str] = set()
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline and len(seen) < 2:
        if process.poll() is not None:
            pytest.fail(f"server exited with {process.returncode}: {log.read_text(errors='replace')}")
        try:
            seen.add(
                httpx.get(url, timeout=2.0, headers={"connection": "close"}).headers["x-knowledge-worker"]
            )
        except httpx.TransportError:
            time.sleep(0.2)
    if len(seen) < 2:
        pytest.fail(f"two workers did not answer within {START_S} s: {log.read_text(errors='replace')}")


class Answered:
    """Which worker answered each POST of a client."""

    def __init__(self) -> None:
        self.pids: list[str] = []

    async def __call__(self, response: httpx2.Response) -> None:
        if response.request.method == "POST":
            self.pids.append(response.headers["x-knowledge-worker"])


@asynccontextmanager
async def client(workers: Workers, user: str, mode: str, answered: Answered) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {workers.tokens[user]}"},
            limits=httpx2.Limits(max_keepalive_connections=0),  # each request a new connection
            event_hooks={"response": [answered]},
            timeout=60,
        ) as http,
        Client(streamable_http_client(workers.url, http_client=http), mode=mode) as connected,
    ):
        yield connected


async def call(connected: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await connected.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def uris(found: dict[str, Any]) -> list[str]:
    return [r["uri"] for r in found["results"]]


async def test_a_session_started_on_one_worker_is_honoured_on_the_other(workers: Workers) -> None:
    answered = Answered()
    async with client(workers, "alice", "legacy", answered) as alice:  # 2025-11-25: Mcp-Session-Id
        for _ in range(30):  # until the hiding search lands on the other worker
            await call(alice, "session_reset")
            shown = uris(await call(alice, "knowledge_search", query="cook", limit=2))
            first_worker = answered.pids[-1]
            again = await call(alice, "knowledge_search", query="cook", limit=2, seen="hide")
            if answered.pids[-1] != first_worker:
                break
        else:
            pytest.fail(f"every search went to worker {first_worker}")
        assert len(shown) == 2 and uris(again)
        assert not set(shown) & set(uris(again)), "the other worker did not hide what this session saw"
        info = await call(alice, "session_info")
    assert info["session_id"] and set(shown) <= set(info["seen"])
    assert len(set(answered.pids)) == 2


async def test_a_whole_conversation_of_a_stateless_client_works_across_workers(workers: Workers) -> None:
    answered = Answered()
    async with client(workers, "alice", "auto", answered) as alice:  # 2026-07-28 when offered
        names = {tool.name for tool in (await alice.list_tools()).tools}
        assert {"knowledge_search", "session_info", "notes_get"} <= names
        session = f"research-{uuid.uuid4().hex[:8]}"
        shown = uris(await call(alice, "knowledge_search", query="cook", limit=2, session_id=session))
        hidden: list[list[str]] = []
        for _ in range(6):
            found = await call(
                alice, "knowledge_search", query="cook", limit=2, seen="hide", session_id=session
            )
            hidden.append(uris(found))
        info = await call(alice, "session_info", session_id=session)
    assert not set(shown) & set(hidden[0])
    assert set(shown) <= set(info["seen"]) and len(info["recent_queries"]) == 7
    assert len(set(answered.pids)) == 2


async def test_a_rate_limit_holds_across_both_workers(workers: Workers) -> None:
    answered = Answered()
    async with client(workers, "bob", "legacy", answered) as bob:
        # enough refused calls that both workers answer some (each call may land on either)
        calls = SEARCH_LIMIT + REFUSED_CALLS
        results = [await bob.call_tool("notes_search", {"query": "meeting"}) for _ in range(calls)]
        other_tool = await bob.call_tool("knowledge_search", {"query": "meeting"})
    assert [r.is_error for r in results] == [False] * SEARCH_LIMIT + [True] * REFUSED_CALLS
    assert "rate limit reached for notes_search" in results[-1].content[0].text  # type: ignore[union-attr]
    assert not other_tool.is_error
    assert len(set(answered.pids[-(calls + 1) :])) == 2  # the calls were spread over both


async def test_alice_never_sees_bobs_items_or_session(workers: Workers) -> None:
    answered = Answered()
    async with client(workers, "bob", "legacy", answered) as bob:
        bobs = await call(bob, "knowledge_search", query="meeting", limit=20)
        bob_session = (await call(bob, "session_info"))["session_id"]
    assert bobs["results"]
    async with client(workers, "alice", "legacy", answered) as alice:
        for _ in range(4):  # on both workers
            found = await call(alice, "knowledge_search", query="meeting", limit=20)
            assert not set(uris(found)) & set(uris(bobs))
        borrowed = await call(alice, "session_info", session_id=bob_session)
        bobs_item = bobs["results"][0]["uri"].split("://", 1)[1]
        fetched = [await alice.call_tool("notes_get", {"note_id": bobs_item}) for _ in range(2)]
    assert borrowed["seen"] == [] and borrowed["recent_queries"] == []
    assert all(result.is_error for result in fetched)


def test_delete_ends_the_session_on_every_worker_and_get_is_declined(workers: Workers) -> None:
    auth = {"authorization": f"Bearer {workers.tokens['alice']}"}
    accept = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    headers = auth | accept
    with httpx.Client(timeout=30, headers={"connection": "close"}) as http:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "p", "version": "1"},
        }
        opened = http.post(
            workers.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
            headers=headers,
        )
        sid = opened.headers["mcp-session-id"]
        session = headers | {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}

        def tool(name: str, **arguments: Any) -> dict[str, Any]:
            body = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
            text = http.post(workers.url, json=body, headers=session).text
            data = [line[5:] for line in text.splitlines() if line.startswith("data:")]
            return dict(json.loads(data[-1] if data else text)["result"]["structuredContent"])

        assert tool("session_cite", uris=["notes://x"])["cited"] == ["notes://x"]
        assert http.get(workers.url, headers=session).status_code == 405
        assert http.delete(workers.url, headers=session).status_code == 200
        for _ in range(4):  # whichever worker answers
            assert tool("session_info")["cited"] == []
        assert http.delete(workers.url, headers=headers).status_code == 400  # no session named
        unauthenticated = http.delete(workers.url, headers=accept | {"mcp-session-id": sid})
        assert unauthenticated.status_code == 401
