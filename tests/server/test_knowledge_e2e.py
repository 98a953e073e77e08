"""knowledge_search, sessions and the deep-research aliases through real server processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_types import TextContent

from tests.conftest import FIXTURES, ROOT, import_into, serve_args, source_of
from tests.server.transports.test_http_e2e import free_port, serve_command, stop, wait_until_healthy

pytestmark = pytest.mark.anyio

QUERY = "sourdough OR sqlite OR captain"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def several_sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("knowledge") / "data"
    for source in ("notes", "media", "chats", "characters"):
        summary = await import_into(data_dir, source, FIXTURES / source)
        assert summary.added > 0
    return data_dir


def stdio(data_dir: Path, **env: str) -> Client:
    base = {k: v for k, v in os.environ.items() if not k.startswith("KNOWLEDGE_MCP_")}
    params = StdioServerParameters(
        command=sys.executable,
        args=serve_args(data_dir),
        env={**base, "KNOWLEDGE_MCP_DEEP_RESEARCH_ALIASES": "always", **env},
        cwd=str(ROOT),
    )
    return Client(params)


async def knowledge(client: Client, **args: Any) -> dict[str, Any]:
    # seen=hide (the default is downrank): these tests follow the session over each transport.
    result = await client.call_tool("knowledge_search", {"query": QUERY, "limit": 3, "seen": "hide", **args})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def uris(response: dict[str, Any]) -> list[str]:
    return [r["uri"] for r in response["results"]]


def only_text(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return dict(json.loads(result.content[0].text))


async def test_stdio_knowledge_search_ranks_several_sources_and_the_session_hides_seen(
    several_sources: Path,
) -> None:
    async with stdio(several_sources) as client:
        wide = await knowledge(client, limit=20, session_id="a-separate-session")
        assert len({source_of(r) for r in wide["results"]}) >= 2
        scores = [r["score"] for r in wide["results"]]
        assert scores == sorted(scores, reverse=True)
        first = await knowledge(client)
        second = await knowledge(client)
        assert first["session_applied"] and second["session_applied"]
        assert uris(first) and uris(second)
        assert not set(uris(first)) & set(uris(second))
    async with stdio(several_sources) as client:  # a new process is a new session
        assert uris(await knowledge(client)) == uris(first)


async def test_a_named_session_survives_a_server_restart(several_sources: Path) -> None:
    async with stdio(several_sources, KNOWLEDGE_MCP_SESSION="restart-check") as client:
        await client.call_tool("session_reset", {})
        first = await knowledge(client)
    async with stdio(several_sources, KNOWLEDGE_MCP_SESSION="restart-check") as client:
        again = await knowledge(client)
        info = (await client.call_tool("session_info", {})).structured_content
    assert not set(uris(first)) & set(uris(again))
    assert info is not None and set(uris(first)) <= set(info["seen"])


async def test_stdio_search_and_fetch_have_the_exact_shapes(several_sources: Path) -> None:
    async with stdio(several_sources) as client:
        found = only_text(await client.call_tool("search", {"query": "sourdough"}))
        assert set(found) == {"results"} and found["results"]
        for hit in found["results"]:
            assert set(hit) == {"id", "title", "url"} and hit["url"]
            item = only_text(await client.call_tool("fetch", {"id": hit["id"]}))
            assert set(item) == {"id", "title", "text", "url", "metadata"}
            assert item["id"] == hit["id"] and item["text"].strip() and item["url"]


@pytest.fixture(scope="module")
def http_url(several_sources: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("http-knowledge") / "server.log"
    env = {**os.environ, "KNOWLEDGE_MCP_DEEP_RESEARCH_ALIASES": "always"}
    with log.open("wb") as sink:
        process = subprocess.Popen(
            serve_command(several_sources, "--no-auth", "--host", "127.0.0.1", "--port", str(port)),
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=env,
        )
    try:
        wait_until_healthy(process, f"http://127.0.0.1:{port}/healthz", log)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


async def test_http_sessions_by_id_hide_seen_items_and_new_sessions_start_fresh(http_url: str) -> None:
    async with Client(http_url) as client:
        first = await knowledge(client, session_id="http-a")
        second = await knowledge(client, session_id="http-a")
        other = await knowledge(client, session_id="http-b")
    assert first["session_applied"]
    assert not set(uris(first)) & set(uris(second))
    assert uris(other) == uris(first)


async def test_http_legacy_clients_get_the_mcp_session_id_as_their_session(http_url: str) -> None:
    async with Client(http_url, mode="legacy") as client:
        first = await knowledge(client)
        second = await knowledge(client)
    assert first["session_applied"] and second["session_applied"]
    assert not set(uris(first)) & set(uris(second))


async def test_http_fetch_returns_the_text_of_every_search_result(http_url: str) -> None:
    async with Client(http_url) as client:
        found = only_text(await client.call_tool("search", {"query": "inverter OR catamaran OR levain"}))
        assert len(found["results"]) >= 2
        for hit in found["results"]:
            item = only_text(await client.call_tool("fetch", {"id": hit["id"]}))
            assert item["id"] == hit["id"] and item["text"].strip()
