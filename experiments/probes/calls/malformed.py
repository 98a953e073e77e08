"""Probe 2, raw malformed messages: each one sent alone over stdio (a line), HTTP (a POST to
/mcp in an initialized session) and WebSocket (a text frame on /ws), then a normal `tools/list`.

Each reply is an error (a JSON-RPC error with a non-zero code; for a batch, an error or an
array of them), a result, code 0, unanswered (nothing within the timeout, or an HTTP status with
no JSON-RPC body) or a crash (the server process gone). A message is answered properly when it
gets an error, or, for the few that are valid requests (an unknown tool may be a tool error, a
huge id is still an id), a result.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
from websockets.asyncio.client import connect

from knowledge_mcp.bench.http import Served

ANSWER_TIMEOUT_S = 10.0
INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "probes", "version": "0"},
}


def call(message_id: Any, params: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": message_id, "method": "tools/call", "params": params})


CASES: list[tuple[str, str]] = [  # every one must get a JSON-RPC error, except VALID
    ("invalid JSON", '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"'),
    ("not an object", '"tools/list"'),
    ("wrong jsonrpc version", json.dumps({"jsonrpc": "1.0", "id": 2, "method": "tools/list"})),
    ("no jsonrpc", json.dumps({"id": 3, "method": "tools/list"})),
    ("missing method", json.dumps({"jsonrpc": "2.0", "id": 4, "params": {}})),
    ("method not a string", json.dumps({"jsonrpc": "2.0", "id": 5, "method": 5})),
    ("unknown method", json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/explode"})),
    ("params as a list", json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": [1]})),
    ("arguments null", call(8, {"name": "notes_search", "arguments": None})),
    ("arguments a list", call(9, {"name": "notes_search", "arguments": ["q"]})),
    ("name a list", call(10, {"name": ["x"], "arguments": {}})),
    ("name missing", call(11, {"arguments": {"query": "x"}})),
    ("unknown tool", call(12, {"name": "no_such_tool", "arguments": {}})),
    ("huge id", call(10**40, {"name": "notes_search", "arguments": {"query": "x"}})),
    ("id an object", call({"a": 1}, {"name": "notes_search", "arguments": {"query": "x"}})),
    (
        "lone surrogate",
        call(13, {"name": "notes_search", "arguments": {"query": "__"}}).replace("__", "\\ud800"),
    ),
    (
        "5,000-digit number",
        call(14, {"name": "notes_search", "arguments": {"limit": 0}}).replace("0}", "9" * 5000 + "}"),
    ),
    ("empty batch", "[]"),
    (
        "batch of two",
        "["
        + json.dumps({"jsonrpc": "2.0", "id": 15, "method": "tools/list"})
        + ","
        + call(16, {"name": "notes_search", "arguments": {"query": "x"}})
        + "]",
    ),
    ("batch of junk", "[1, 2, 3]"),
]
VALID = {"unknown tool", "huge id"}  # a result (a tool error, an answer) is proper too
TOOLS_LIST = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/list"})


def verdict(body: Any) -> str:
    """'error', 'result', 'code 0' or 'unanswered' for one decoded reply (None: no reply)."""
    replies = body if isinstance(body, list) and body else [body]
    if not all(isinstance(r, dict) and ("error" in r or "result" in r) for r in replies):
        return "unanswered"
    codes = [r["error"].get("code") if "error" in r else None for r in replies]
    if any(code == 0 for code in codes):
        return "code 0"
    return "error" if all(isinstance(code, int) for code in codes) else "result"


async def probe_transport(send: Callable[[str], Awaitable[Any]], alive: Callable[[], bool]) -> dict[str, Any]:
    counts = {"messages": 0, "error": 0, "result": 0, "code 0": 0, "unanswered": 0, "crash": 0}
    improper: dict[str, str] = {}
    for case, raw in CASES:
        counts["messages"] += 1
        try:
            with anyio.fail_after(ANSWER_TIMEOUT_S):
                kind = verdict(await send(raw))
        except Exception:
            kind = "unanswered"
        if not alive():
            counts["crash"] += 1
            break
        counts[kind] += 1
        if kind != "error" and not (kind == "result" and case in VALID):
            improper[case] = kind
    try:
        with anyio.fail_after(ANSWER_TIMEOUT_S):
            listed = await send(TOOLS_LIST)
        serving = bool(listed.get("result", {}).get("tools"))
    except Exception:
        serving = False
    named = {k.replace(" ", "_"): v for k, v in counts.items()}
    return {
        **named,
        "answered_properly": counts["messages"] - len(improper) - counts["crash"],
        "improper": improper,
        "serving_after": serving,
    }


async def stdio(command: list[str], env: dict[str, str], log: Any) -> dict[str, Any]:
    """The messages on one stdio server; its stderr goes to `log` (a binary file)."""
    process = await anyio.open_process(command, env=env, stderr=log)
    assert process.stdin and process.stdout
    buffer = b""

    async def send(raw: str) -> Any:
        nonlocal buffer
        await process.stdin.send(raw.encode() + b"\n")  # type: ignore[union-attr]
        while b"\n" not in buffer:
            buffer += await process.stdout.receive()  # type: ignore[union-attr]
        line, buffer = buffer.split(b"\n", 1)
        return json.loads(line)

    try:
        await send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE}))
        await process.stdin.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        return await probe_transport(send, lambda: process.returncode is None)
    finally:
        await process.stdin.aclose()
        with anyio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


def decode(reply: httpx2.Response) -> Any:
    text = reply.text
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in text.splitlines() if line.startswith("data:")]
        text = data[-1] if data else ""
    return json.loads(text) if text.strip() else None


async def http(server: Served, token: str) -> dict[str, Any]:
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-06-18",
    }
    async with httpx2.AsyncClient(timeout=ANSWER_TIMEOUT_S) as client:
        init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE})
        reply = await client.post(server.url, content=init.encode(), headers=headers)
        headers["Mcp-Session-Id"] = reply.headers["mcp-session-id"]
        note = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}'
        await client.post(server.url, content=note, headers=headers)

        async def send(raw: str) -> Any:
            return decode(await client.post(server.url, content=raw.encode(), headers=headers))

        return await probe_transport(send, lambda: server.process.poll() is None)


async def websocket(server: Served, token: str) -> dict[str, Any]:
    url = server.url.replace("http://", "ws://").removesuffix("/mcp") + "/ws"
    headers = {"Authorization": f"Bearer {token}"}
    async with connect(url, subprotocols=["mcp"], additional_headers=headers) as ws:  # type: ignore[list-item]

        async def send(raw: str) -> Any:
            await ws.send(raw)
            return json.loads(await ws.recv())

        await send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE}))
        await ws.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        return await probe_transport(send, lambda: server.process.poll() is None)


def stdio_command(data_dir: str) -> list[str]:
    return [sys.executable, "-m", "knowledge_mcp", "serve", "--transport", "stdio", "--data-dir", data_dir]
