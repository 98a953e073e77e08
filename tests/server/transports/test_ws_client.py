"""Our WebSocket client transport drives the SDK `Client` against a real `serve --transport ws`."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.bench import http as bench_http
from tests.conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio


async def test_the_sdk_client_searches_over_websocket_and_under_load(tmp_path: Path) -> None:
    await import_into(tmp_path, "notes", FIXTURES / "notes")
    async with bench_http.served(tmp_path, auth=True, transport="ws") as server:
        assert server.url.startswith("ws://") and server.url.endswith("/ws")
        token = server.mint("local", 1)[0]
        async with bench_http.ws_client(server.url, token) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"knowledge_search", "notes_search"} <= tools
            found = await client.call_tool("notes_search", {"query": "sourdough"})
        assert not found.is_error
        assert found.structured_content and found.structured_content["results"]
        run = await bench_http.load(bench_http.ws_client, server.url, server.mint("local", 2), ["bread"], 0.5)
    assert run["connected"] == 2 and run["errors"] == 0, run
    assert run["calls"] > 0


async def test_without_a_token_the_websocket_handshake_is_refused(tmp_path: Path) -> None:
    async with bench_http.served(tmp_path, auth=True, transport="ws") as server:
        with pytest.raises(Exception, match="401"):
            async with bench_http.ws_client(server.url, None):
                pass
