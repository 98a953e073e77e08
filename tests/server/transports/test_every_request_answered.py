"""Every request answered, in a real process: over stdio (raw lines), HTTP POST /mcp and /ws,
a malformed or unreadable message gets the spec's error with its id, and the server still
answers a normal `tools/list` afterwards. No traceback, nothing of the request in the log."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.conftest import ROOT, serve_args
from tests.server.auth.test_auth import SECRET, start, token
from tests.server.transports.test_http_e2e import stop
from tests.server.transports.test_websocket import bearer, session

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

SECRET_WORD = "quokkasecret"


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"query": SECRET_WORD}
    for _ in range(levels):
        value = {"a": value}
    return value


def call(message_id: int, arguments: dict[str, Any]) -> str:
    params = {"name": "notes_search", "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": message_id, "method": "tools/call", "params": params})


# (case, raw message, id answered, code)
CASES = [
    ("malformed JSON", '{"jsonrpc": "2.0", "id": 10, "method": "tools/list"', None, -32700),
    ("lone surrogate", call(11, {"query": "__"}).replace("__", "\\ud800"), 11, -32602),
    ("500-level nesting", call(13, {"query": "x", "filters": nested(500)}), 13, -32602),
    (
        "5,000-digit integer",
        call(14, {"query": SECRET_WORD, "limit": 0}).replace("0}", "9" * 5000 + "}"),
        14,
        -32602,
    ),
    (
        "params as an array",
        json.dumps({"jsonrpc": "2.0", "id": 15, "method": "tools/list", "params": [1]}),
        15,
        -32600,
    ),
    (
        "params as a string",
        json.dumps({"jsonrpc": "2.0", "id": 16, "method": "tools/list", "params": "x"}),
        16,
        -32600,
    ),
    ("no jsonrpc", json.dumps({"id": 17, "method": "tools/list"}), 17, -32600),
    ("method not a string", json.dumps({"jsonrpc": "2.0", "id": 18, "method": 5}), 18, -32600),
    ("arguments null", call(19, None), 19, -32602),  # type: ignore[arg-type]
]
NULL_ARGUMENTS = (
    "Invalid params: params.arguments must be an object of the tool's arguments ({} for none), not null"
)
TOOLS_LIST = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "raw-test", "version": "0"},
}


def assert_answered(answers: dict[Any, dict[str, Any]]) -> None:
    for case, _, message_id, code in CASES:
        assert message_id in answers, f"{case}: no answer"
        assert answers[message_id]["error"]["code"] == code, case
        assert SECRET_WORD not in answers[message_id]["error"]["message"], case
    assert answers[19]["error"]["message"] == NULL_ARGUMENTS  # no validation dump, no URL
    assert answers[99]["result"]["tools"], "tools/list after the refused messages"


def assert_quiet_log(log: str) -> None:
    assert "Traceback" not in log
    assert SECRET_WORD not in log and "99999" not in log
    assert "message refused rpc=11 code=-32602 (lone surrogate)" in log


async def test_stdio_answers_every_malformed_line_and_keeps_serving(tmp_path: Path) -> None:
    command = [sys.executable, *serve_args(tmp_path)]
    lines = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE})]
    lines += [json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]
    lines += [raw for _, raw, _, _ in CASES] + [TOOLS_LIST]
    with anyio.fail_after(60):
        process = await anyio.open_process(command, cwd=ROOT)
        try:
            assert process.stdin and process.stdout and process.stderr
            await process.stdin.send("".join(line + "\n" for line in lines).encode())
            raw, answers = b"", {}
            async for chunk in process.stdout:
                raw += chunk
                *complete, _ = raw.split(b"\n")
                answers = {m.get("id"): m for m in map(json.loads, filter(None, complete))}
                if 99 in answers:
                    break
            await process.stdin.aclose()
            stderr = b"".join([c async for c in process.stderr]).decode()
            assert await process.wait() == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert_answered(answers)
    assert_quiet_log(stderr)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`serve --transport http` with an HS256 secret: /mcp and /ws on one port."""
    tmp = tmp_path_factory.mktemp("answered")
    env = {**os.environ, "KNOWLEDGE_MCP_JWT_SECRET": SECRET}
    process, url = start(tmp / "data", tmp / "server.log", env, "--transport", "http")
    try:
        yield {
            "mcp": url,
            "ws": url.replace("http://", "ws://").removesuffix("/mcp") + "/ws",
            "log": tmp / "server.log",
        }
    finally:
        stop(process)


def post(client: httpx.Client, url: str, body: str, headers: dict[str, str]) -> httpx.Response:
    return client.post(url, content=body.encode(), headers=headers)


def http_session(client: httpx.Client, url: str) -> dict[str, str]:
    headers = {
        **bearer(token("alice")),
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-06-18",
    }
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE})
    reply = post(client, url, initialize, headers)
    assert reply.status_code == 200, reply.text
    headers["Mcp-Session-Id"] = reply.headers["mcp-session-id"]
    post(client, url, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), headers)
    return headers


def answer_of(reply: httpx.Response) -> dict[str, Any]:
    text = reply.text
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    return dict(json.loads(text))


async def test_http_answers_every_malformed_body_with_its_id_and_keeps_serving(
    server: dict[str, Any],
) -> None:
    with httpx.Client(timeout=30) as client:
        headers = http_session(client, server["mcp"])
        answers = {}
        for case, raw, message_id, code in [*CASES, ("tools/list", TOOLS_LIST, 99, 0)]:
            reply = post(client, server["mcp"], raw, headers)
            assert reply.status_code == (200 if code in (0, -32602) else 400), case
            answers[message_id] = answer_of(reply)
    assert_answered(answers)
    assert_quiet_log(server["log"].read_text())


async def test_http_without_credentials_gets_its_401_before_any_message_is_read(
    server: dict[str, Any],
) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx.Client(timeout=30) as client:
        reply = post(client, server["mcp"], CASES[0][1], headers)
    assert reply.status_code == 401


async def test_websocket_answers_every_malformed_frame_with_its_id_and_keeps_serving(
    server: dict[str, Any],
) -> None:
    async with session(server["ws"], bearer(token("alice"))) as peer:
        answers = {}
        for _, raw, _, _ in CASES:
            await peer.ws.send(raw)
            reply = await peer.frame()
            answers[reply["id"]] = reply
        listed = await peer.request("tools/list")
    assert_answered({**answers, 99: listed})
    assert "websocket message refused rpc=13 code=-32602 (nesting)" in server["log"].read_text()
