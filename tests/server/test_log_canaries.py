"""A hostile run leaves no content in any log.

Words planted in a note's text and title, in notes written through the tools, in session notes,
claims, quotes, queries and prompt arguments, and in the inputs that provoke errors (a folder
part of 256 bytes, a title that needs a file name cut, a bidi control, a tools/call whose name
is a list, a 200-character session id, booleans for numbers), are sent to real servers: a stdio
process at INFO, one at DEBUG watching its folders, an HTTP process at DEBUG (over HTTP and over
WebSocket), and an in-memory
server whose loguru records a DEBUG sink with `diagnose` on takes. Every request is answered
with a result or a JSON-RPC error of the spec's codes (never 0), and no planted word appears in
any captured log.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import jwt
import pytest
from loguru import logger
from mcp import Client
from mcp.shared.exceptions import MCPError

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.notes import source
from knowledge_mcp.sources.storage.db import database_path, open_database
from tests.conftest import ROOT, import_into, serve_args
from tests.server.auth.test_auth import SECRET, start
from tests.server.transports.test_every_request_answered import INITIALIZE, answer_of, post
from tests.server.transports.test_http_e2e import stop
from tests.server.transports.test_websocket import bearer
from tests.server.transports.test_websocket import session as ws_session

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

CANARY = "qzvcanary"  # every planted word starts with it; the logs are searched for it, any case
NOTE_TITLE = f"Sourdough {CANARY}importedtitle"
NOTE_BODY = f"Feed the starter with rye flour. The {CANARY}notebody sentence stays private."
SESSION_ID = f"{CANARY}session" * 12  # 192 characters; session ids have at most 128
SPEC_CODES = {-32700, -32600, -32601, -32602, -32603}


def hostile_calls(uri: str) -> list[tuple[str, dict[str, Any]]]:
    """(method, params) of the run; `uri` is the imported note's."""

    def tool(tool_name: Any, /, **arguments: Any) -> tuple[str, dict[str, Any]]:
        return "tools/call", {"name": tool_name, "arguments": arguments}

    return [
        tool("notes_search", query=f"rye {CANARY}query"),
        tool("knowledge_search", query=f"{CANARY}query2 starter", limit=5),
        tool("notes_get", note_id=uri, query=f"{CANARY}anchorquery"),
        tool("notes_create", title=f"{CANARY}createdtitle", content=f"{CANARY}createdbody text"),
        tool("notes_create", title="😀" * 80 + f"{CANARY}emoji", content=f"{CANARY}emojibody"),
        tool("notes_create", title=f"{CANARY}t", content=f"{CANARY}c", folder=f"{CANARY}folder" + "a" * 250),
        tool("notes_create", title=f"report\u202e{CANARY}bidi", content=f"{CANARY}bidibody"),
        tool("notes_create", title=f"{CANARY}con", content=f"{CANARY}conbody", folder="CON"),
        tool("notes_update", note_id=uri, append=f"{CANARY}appended", expected_version=True),
        tool("notes_search", query=f"{CANARY}boolquery", limit=True),
        tool("notes_get", note_id=uri, loc={"chunk_index": True}, query=f"{CANARY}locquery"),
        tool("session_start", name=f"{CANARY}sessionname"),
        tool("session_note", text=f"{CANARY}sessionnote"),
        tool("verify_quote", uri=uri, quote=f"Feed the starter {CANARY}quote"),
        tool("session_cite", uris=[uri, uri], claim=f"{CANARY}claim", quote=f"{CANARY}citedquote"),
        tool("session_export", format="markdown"),
        tool([f"{CANARY}listname"]),
        tool({f"{CANARY}key": 1}),
        ("tools/call", {"name": "notes_search", "arguments": [f"{CANARY}listargs"]}),
        ("resources/read", {"uri": f"knowledge://sessions/{SESSION_ID}/export.md"}),
        ("resources/read", {"uri": f"notes://{CANARY}missing"}),
        ("prompts/get", {"name": f"{CANARY}prompt", "arguments": {"topic": f"{CANARY}promptarg"}}),
    ]


def assert_answered(answers: list[dict[str, Any]]) -> None:
    """Each answer is a result or an error with a code the JSON-RPC spec gives."""
    for answer in answers:
        if "error" in answer:
            assert answer["error"]["code"] in SPEC_CODES, answer


def assert_served_as_meant(answers: list[dict[str, Any]]) -> None:
    """The run did what it says: the notes were written (the emoji title too), the bad names and
    the booleans refused as tool errors, the research calls answered."""
    outcome = [a["result"].get("isError") if "result" in a else "error" for a in answers]
    assert outcome[:5] == [False] * 5, answers[:5]
    assert outcome[5:11] == [True] * 6, answers[5:11]
    assert outcome[11:16] == [False] * 5, answers[11:16]
    assert outcome[16:] == ["error"] * 6, answers[16:]


def assert_no_canary(log: str, where: str) -> None:
    assert log.strip(), f"{where}: nothing was logged (the run did not run?)"
    lowered = log.lower()
    at = lowered.find(CANARY)
    assert at < 0, f"{where} logged a planted word: …{log[max(0, at - 300) : at + 100]}…"
    assert "Traceback" not in log and "unhashable" not in log, where


async def planted(data_dir: Path, tmp_path: Path, user: str) -> str:
    """A notes folder with a note carrying the planted title and text, imported for `user`; its uri."""
    vault = tmp_path / f"vault-{user}"
    vault.mkdir()
    (vault / "starter.md").write_text(f"---\ntitle: {NOTE_TITLE}\n---\n\n{NOTE_BODY}\n", encoding="utf-8")
    summary = await import_into(data_dir, "notes", vault, user=user)
    assert summary.added == 1

    db = await open_database(database_path(data_dir, user, "notes"), source.migrations)
    try:
        row = await db.fetchone("SELECT item_id FROM notes_items")
    finally:
        await db.close()
    assert row is not None
    return f"notes://{row['item_id']}"


def rpc(message_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message_id, "method": method, "params": params}


async def stdio_run(data_dir: Path, uri: str, level: str, *extra: str) -> tuple[list[dict[str, Any]], str]:
    """Every hostile call over stdio, one at a time; the answers and the process's stderr."""
    env = {**os.environ, "KNOWLEDGE_MCP_LOG_LEVEL": level}
    command = [sys.executable, *serve_args(data_dir), *extra]
    opening = [rpc(0, "initialize", INITIALIZE), {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    answers: list[dict[str, Any]] = []
    with anyio.fail_after(180):
        process = await anyio.open_process(command, cwd=ROOT, env=env)
        try:
            assert process.stdin and process.stdout and process.stderr
            lines = _lines(process.stdout)
            await process.stdin.send("".join(json.dumps(m) + "\n" for m in opening).encode())
            await _answer_to(lines, 0)
            for number, (method, params) in enumerate(hostile_calls(uri), 1):
                await process.stdin.send((json.dumps(rpc(number, method, params)) + "\n").encode())
                answers.append(await _answer_to(lines, number))
            await process.stdin.aclose()
            stderr = b"".join([chunk async for chunk in process.stderr]).decode("utf-8", "replace")
            assert await process.wait() == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    return answers, stderr


async def _lines(stream: Any) -> AsyncIterator[dict[str, Any]]:
    buffered = b""
    async for chunk in stream:
        buffered += chunk
        *complete, buffered = buffered.split(b"\n")
        for line in complete:
            if line.strip():
                yield json.loads(line)


async def _answer_to(lines: AsyncIterator[dict[str, Any]], message_id: int) -> dict[str, Any]:
    async for message in lines:
        if message.get("id") == message_id:
            return message
    raise AssertionError(f"no answer to request {message_id}")


async def test_a_hostile_run_over_stdio_at_info_logs_no_planted_word(data_dir: Path, tmp_path: Path) -> None:
    uri = await planted(data_dir, tmp_path, "local")
    answers, stderr = await stdio_run(data_dir, uri, "INFO")
    assert_answered(answers)
    assert_served_as_meant(answers)
    assert answers[-6]["error"]["code"] == -32602  # the tools/call named by a list: not code 0
    assert_no_canary(stderr, "stdio at INFO")
    assert "method=tools/call" in stderr  # the request lines are there


async def test_a_hostile_run_over_stdio_at_debug_while_watching_logs_no_planted_word(
    data_dir: Path, tmp_path: Path
) -> None:
    uri = await planted(data_dir, tmp_path, "local")
    answers, stderr = await stdio_run(data_dir, uri, "DEBUG", "--watch")
    assert_answered(answers)
    assert_served_as_meant(answers)
    assert_no_canary(stderr, "stdio at DEBUG with --watch")
    assert " arguments " in stderr and "DEBUG" in stderr  # DEBUG was on


def write_token() -> str:
    """alice's JWT granting read and write (the hostile run writes notes)."""
    now = int(time.time())
    claims = {"sub": "alice", "iat": now, "exp": now + 600, "scope": "read write"}
    return jwt.encode(claims, SECRET, algorithm="HS256")


def writing_session(client: httpx.Client, url: str) -> dict[str, str]:
    """An initialized HTTP session of alice with write access."""
    headers = {
        "Authorization": f"Bearer {write_token()}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-06-18",
    }
    reply = post(client, url, json.dumps(rpc(0, "initialize", INITIALIZE)), headers)
    assert reply.status_code == 200, reply.text
    headers["Mcp-Session-Id"] = reply.headers["mcp-session-id"]
    post(client, url, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), headers)
    return headers


async def test_a_hostile_run_over_http_and_websocket_at_debug_logs_no_planted_word(
    data_dir: Path, tmp_path: Path
) -> None:
    uri = await planted(data_dir, tmp_path, "alice")
    env = {**os.environ, "KNOWLEDGE_MCP_JWT_SECRET": SECRET, "KNOWLEDGE_MCP_LOG_LEVEL": "DEBUG"}
    log = tmp_path / "server.log"
    process, url = start(data_dir, log, env, "--transport", "http")
    try:
        with httpx.Client(timeout=60) as client:
            headers = writing_session(client, url)
            over_http = []
            for number, (method, params) in enumerate(hostile_calls(uri), 1):
                reply = post(client, url, json.dumps(rpc(number, method, params)), headers)
                over_http.append(answer_of(reply))
        ws_url = url.replace("http://", "ws://").removesuffix("/mcp") + "/ws"
        async with ws_session(ws_url, bearer(write_token())) as peer:
            over_ws = [await peer.request(method, params) for method, params in hostile_calls(uri)]
    finally:
        stop(process)
    for answers in (over_http, over_ws):
        assert_answered(answers)
        assert_served_as_meant(answers)
    assert_no_canary(log.read_text(encoding="utf-8", errors="replace"), "HTTP and WebSocket at DEBUG")


async def test_a_hostile_run_in_process_leaves_no_planted_word_in_a_diagnosing_sink(
    data_dir: Path, tmp_path: Path
) -> None:
    uri = await planted(data_dir, tmp_path, "local")
    mcp, host = build_server(Settings(data_dir=data_dir))
    lines: list[str] = []
    sink = logger.add(lines.append, level="TRACE", format="{level} {message}\n{exception}", diagnose=True)
    answers: list[dict[str, Any]] = []
    try:
        async with Client(mcp) as client:
            for method, params in hostile_calls(uri):
                try:
                    await client.session._dispatcher.send_raw_request(method, params, {})
                    answers.append({"result": True})
                except MCPError as exc:
                    answers.append({"error": {"code": exc.error.code}})
    finally:
        logger.remove(sink)
        await host.close()
    assert_answered(answers)
    assert_no_canary("".join(lines), "an in-process DEBUG sink")
