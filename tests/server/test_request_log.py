"""The request log: one INFO line per MCP request with ids, user, client, tool, outcome and timing;
arguments only at DEBUG (their text only where it is an id or a choice); never tokens, API keys
or query text, at INFO or DEBUG.

The server runs in this process (uvicorn on a free loopback port, with authentication), so a
loguru sink added here sees exactly what the server logs, and a real MCP client calls it over HTTP.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import jwt
import pytest
import uvicorn
from loguru import logger
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.auth.keys import SqliteKeyStore
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.transports.http import http_app
from tests.conftest import FIXTURES, import_into
from tests.server.transports.test_http_e2e import free_port

pytestmark = pytest.mark.anyio

SECRET = "request-log-secret-0123456789abcdef"
MARKER = "quizzicalwombat"  # a query word that must never reach INFO


@asynccontextmanager
async def served(settings: Settings) -> AsyncIterator[str]:
    """The authenticated HTTP app under uvicorn in this process; yields the /mcp URL."""
    mcp, host = build_server(settings, authenticate=True)
    config = uvicorn.Config(
        http_app(mcp, settings, host), host="127.0.0.1", port=settings.port, log_config=None, lifespan="on"
    )
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(30):
            while not server.started:
                await anyio.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{settings.port}/mcp"
        finally:
            server.should_exit = True
    await host.pool.close()


@asynccontextmanager
async def captured(level: str) -> AsyncIterator[list[str]]:
    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(str(message)), level=level, format="{level} {message}")
    try:
        yield lines
    finally:
        logger.remove(sink)


async def drive(url: str, credential: str, client_name: str) -> None:
    headers = {"Authorization": f"Bearer {credential}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(
            streamable_http_client(url, http_client=http),
            client_info=Implementation(name=client_name, version="1"),
        ) as client,
    ):
        ok = await client.call_tool("notes_search", {"query": f"bread {MARKER}"})
        assert not ok.is_error, ok.content[0].text
        bad = await client.call_tool("notes_get", {"note_id": f"{MARKER}-missing"})
        assert bad.is_error
        await client.call_tool("knowledge_search", {"query": MARKER, "limit": 3})


async def test_request_lines_carry_ids_user_tool_and_timing_but_never_secrets_or_query_text(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    await import_into(data_dir, "notes", FIXTURES / "notes", user="alice")
    store = await SqliteKeyStore.open(data_dir)
    try:
        api_key = await store.create("alice")
    finally:
        await store.close()
    token = jwt.encode({"sub": "alice", "exp": int(time.time()) + 300}, SECRET, algorithm="HS256")
    settings = Settings(data_dir=data_dir, port=free_port(), jwt_secret=SECRET)

    async with captured("INFO") as info, captured("DEBUG") as debug, served(settings) as url:
        await drive(url, token, "log-test-client")
        await drive(url, api_key, "log-test-client")

    requests = [line for line in info if line.startswith("INFO request ")]
    calls = [line for line in requests if "method=tools/call" in line]
    assert len(calls) == 6, requests
    pattern = re.compile(
        r"^INFO request [0-9a-f]{8} rpc=\S+ user=alice client=log-test-client method=tools/call "
        r"tool=(notes_search|notes_get|knowledge_search) outcome=(ok|tool_error) ms=\d+\.\d$"
    )
    for line in calls:
        assert pattern.match(line), line
    assert sum("tool=notes_get outcome=tool_error" in line for line in calls) == 2
    assert sum("tool=notes_search outcome=ok" in line for line in calls) == 2
    assert any("method=tools/list" in line for line in requests)
    assert len({line.split()[2] for line in requests}) == len(requests)  # one id per request

    everything_at_info = "\n".join(info)
    for secret in (token, api_key, api_key[3:], SECRET, MARKER, "Bearer"):
        assert secret not in everything_at_info
    # at DEBUG the arguments are there: ids and numbers as given, the query only as its length
    arguments = [line for line in debug if " arguments " in line]
    assert any(f'"note_id": "{MARKER}-missing"' in line for line in arguments), arguments
    assert any('"query": "<' in line and '"limit": 3' in line for line in arguments), arguments
    everything_at_debug = "\n".join(line for line in debug if f"{MARKER}-missing" not in line)
    for secret in (token, api_key, SECRET, MARKER):
        assert secret not in everything_at_debug
