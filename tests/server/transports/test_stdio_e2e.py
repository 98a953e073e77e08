"""The real server as a subprocess over stdio, driven by the SDK's stdio client and by raw JSON-RPC."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.budgets import within_budget
from tests.conftest import ROOT, item_id, serve_args

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

EXPECTED_TOOLS = {
    "notes_search",
    "notes_get",
    "media_search",
    "media_get",
    "media_transcript",
    "chats_search",
    "chats_get",
    "characters_search",
    "characters_get",
    "prompts_search",
    "prompts_get",
}


@pytest.fixture
def imported_data_dir(cli_imported_notes: Path) -> Path:
    return cli_imported_notes


async def test_stdio_server_lists_tools_answers_and_survives_bad_calls(imported_data_dir: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=serve_args(imported_data_dir), cwd=ROOT)
    with anyio.fail_after(60):
        async with Client(params) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) >= EXPECTED_TOOLS
            for name in EXPECTED_TOOLS:
                annotations = tools[name].annotations
                assert annotations is not None and annotations.read_only_hint is True, name
                assert tools[name].output_schema and "properties" in tools[name].output_schema, name

            found = await client.call_tool("notes_search", {"query": "levain autolyse"})
            assert not found.is_error, found.content[0].text
            assert found.structured_content is not None
            top = found.structured_content["results"][0]
            assert "sourdough" in top["title"].lower()
            assert top["uri"] == f"notes://{item_id(top)}"

            bad = await client.call_tool("notes_search", {"query": "bread", "limit": 0})
            assert bad.is_error
            assert "limit" in bad.content[0].text

            again = await client.call_tool(
                "notes_get",
                {"note_id": top["uri"], "loc": top["loc"], "retrieval": {"mode": "chunk", "max_tokens": 300}},
            )
            assert within_budget(again, 300)["meta"]["uri"] == top["uri"]


def rpc(message_id: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if message_id is not None:
        message["id"] = message_id
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


async def test_stdout_carries_only_json_rpc_and_logs_go_to_stderr(imported_data_dir: Path) -> None:
    initialize = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    }
    requests = [
        rpc(1, "initialize", initialize),
        rpc(None, "notifications/initialized"),
        rpc(2, "tools/list"),
        rpc(3, "tools/call", {"name": "notes_search", "arguments": {"query": "levain"}}),
        rpc(4, "tools/call", {"name": "notes_get", "arguments": {"note_id": "no-such-note"}}),
    ]
    with anyio.fail_after(60):
        process = await anyio.open_process([sys.executable, *serve_args(imported_data_dir)], cwd=ROOT)
        try:
            assert process.stdin and process.stdout and process.stderr
            for line in requests:
                await process.stdin.send(line)
            raw = b""
            answered: dict[int, dict[str, Any]] = {}
            async for chunk in process.stdout:
                raw += chunk
                *complete, _ = raw.split(b"\n")
                answered = {m["id"]: m for m in map(json.loads, filter(None, complete)) if "id" in m}
                if {1, 2, 3, 4} <= set(answered):
                    break
            await process.stdin.aclose()
            rest = b"".join([c async for c in process.stdout])
            stderr = b"".join([c async for c in process.stderr]).decode()
            assert await process.wait() == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()

    lines = [line for line in (raw + rest).decode().splitlines() if line.strip()]
    assert lines
    for line in lines:
        message = json.loads(line)  # anything that is not JSON fails here
        assert message["jsonrpc"] == "2.0"
        assert ("id" in message and ("result" in message or "error" in message)) or "method" in message
    assert answered[1]["result"]["serverInfo"]["name"] == "knowledge-mcp"
    assert {t["name"] for t in answered[2]["result"]["tools"]} >= EXPECTED_TOOLS
    assert answered[3]["result"]["isError"] is False
    assert answered[3]["result"]["structuredContent"]["count"] >= 1
    assert answered[4]["result"]["isError"] is True
    assert "stdio" in stderr  # the log line went to stderr, not stdout
    # one request line each, on stderr: who, which client, which tool, how it went; never the query
    assert "user=local client=raw-test method=initialize outcome=ok" in stderr
    assert "method=tools/call tool=notes_search outcome=ok" in stderr
    assert "method=tools/call tool=notes_get outcome=tool_error" in stderr
    assert "levain" not in stderr
