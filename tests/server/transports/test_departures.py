"""A client going away is a DEBUG line, not a traceback: clients that close their sockets
mid-request or DELETE their session while a call runs leave no ERROR in the server's log."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.requests import ClientDisconnect
from starlette.types import Message, Receive, Scope, Send

from knowledge_mcp.server.transports.departures import DepartureFilter, QuietDepartures, is_departure
from tests.server.auth.test_auth import start
from tests.server.transports.test_http_e2e import stop

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("exc", "departed"),
    [
        (anyio.ClosedResourceError(), True),
        (anyio.BrokenResourceError(), True),
        (ClientDisconnect(), True),
        (ConnectionResetError(), True),
        (BrokenPipeError(), True),
        (
            RuntimeError(
                "Unexpected ASGI message 'http.response.body' sent, after response already completed."
            ),
            True,
        ),
        (ExceptionGroup("tg", [anyio.ClosedResourceError(), ClientDisconnect()]), True),
        (ExceptionGroup("tg", [anyio.ClosedResourceError(), ValueError("a bug")]), False),
        (RuntimeError("something else"), False),
        (ValueError("a bug"), False),
        (None, False),
    ],
)
def test_only_errors_that_say_the_client_is_gone_are_departures(
    exc: BaseException | None, departed: bool
) -> None:
    assert is_departure(exc) is departed


def record(exc: BaseException) -> logging.LogRecord:
    try:
        raise exc
    except BaseException as raised:
        info = (type(raised), raised, raised.__traceback__)
    return logging.LogRecord(
        "mcp.server.streamable_http", logging.ERROR, __file__, 1, "SSE response error", (), info
    )


def test_a_logged_departure_becomes_one_debug_line_without_its_traceback() -> None:
    entry = record(ExceptionGroup("tg", [anyio.ClosedResourceError()]))
    assert DepartureFilter().filter(entry)
    assert (entry.levelname, entry.exc_info) == ("DEBUG", None)
    assert entry.getMessage() == "client left: SSE response error (ClosedResourceError)"


def test_any_other_logged_error_keeps_its_level_and_traceback() -> None:
    entry = record(ValueError("a bug"))
    assert DepartureFilter().filter(entry)
    assert entry.levelname == "ERROR" and entry.exc_info is not None


async def drive(app: Any) -> list[Message]:
    """Run an ASGI app for one POST /mcp; the messages it sent."""
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": []}
    await QuietDepartures(app)(scope, receive, send)
    return sent


START = {"type": "http.response.start", "status": 200, "headers": []}
CHUNK = {"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True}
LAST = {"type": "http.response.body", "body": b"", "more_body": False}


async def test_a_stream_cut_by_a_closed_session_is_finished_quietly() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send(START)
        await send(CHUNK)
        raise ExceptionGroup("tg", [anyio.ClosedResourceError()])

    assert await drive(app) == [START, CHUNK, LAST]


async def test_a_response_left_unfinished_is_finished_and_a_late_write_dropped() -> None:
    async def unfinished(scope: Scope, receive: Receive, send: Send) -> None:
        await send(START)

    async def late(scope: Scope, receive: Receive, send: Send) -> None:
        await send(START)
        await send(LAST)
        await send(CHUNK)

    assert await drive(unfinished) == [START, LAST]
    assert await drive(late) == [START, LAST]


async def test_a_request_whose_client_left_before_the_answer_gets_a_503_not_a_traceback() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise ClientDisconnect()

    sent = await drive(app)
    assert sent[0]["status"] == 503 and sent[-1]["more_body"] is False


async def test_a_real_error_still_raises() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise ValueError("a bug")

    with pytest.raises(ValueError):
        await drive(app)


# --- a real server and clients that leave ------------------------------------------------------

INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "leaver", "version": "0"},
}
CALL = {"name": "knowledge_search", "arguments": {"query": "levain bread solar", "limit": 100}}


def raw(port: int, method: str, body: Any, session: str | None = None) -> bytes:
    data = json.dumps(body).encode() if body is not None else b""
    lines = [
        f"{method} /mcp HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
        "MCP-Protocol-Version: 2025-06-18",
        f"Content-Length: {len(data)}",
        *([f"Mcp-Session-Id: {session}"] if session else []),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


async def session_of(port: int) -> str | None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw(port, "POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE}))
    head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)).decode()
    writer.transport.abort()  # gone before reading the answer's body
    found = [
        line.split(":", 1)[1].strip()
        for line in head.split("\r\n")
        if line.lower().startswith("mcp-session-id")
    ]
    return found[0] if found else None


async def leave_mid_call(port: int, delete: bool) -> None:
    session = await session_of(port)
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        raw(port, "POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": CALL}, session)
    )
    await asyncio.sleep(random.random() * 0.05)
    if delete:  # the session ends while its call runs
        _, deleter = await asyncio.open_connection("127.0.0.1", port)
        deleter.write(raw(port, "DELETE", None, session))
        await asyncio.sleep(random.random() * 0.2)
        deleter.close()
    writer.transport.abort()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, Any]]:
    process, url = start(tmp_path / "data", tmp_path / "server.log", dict(os.environ), "--no-auth")
    try:
        yield {"url": url, "port": int(url.split(":")[2].split("/")[0]), "log": tmp_path / "server.log"}
    finally:
        stop(process)


@pytest.mark.slow
async def test_clients_that_leave_mid_request_leave_no_traceback(server: dict[str, Any]) -> None:
    with anyio.fail_after(120):
        await asyncio.gather(*(leave_mid_call(server["port"], delete=i % 2 == 0) for i in range(120)))
        await asyncio.sleep(1)
    async with httpx.AsyncClient(timeout=30) as client:
        health = await client.get(server["url"].removesuffix("/mcp") + "/healthz")
    assert health.status_code == 200
    log = server["log"].read_text()
    assert "method=tools/call" in log  # the calls did reach the server
    assert "Traceback" not in log and " ERROR " not in log, log[-3000:]
