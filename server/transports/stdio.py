"""MCP over stdin/stdout, with every request answered.

The SDK's `stdio_server` parses each line and drops one it cannot read (malformed JSON,
`params` as an array, a lone surrogate, deep nesting, a huge number) with a DEBUG line, so the
client waits for an answer until its own timeout. Here each line is read by
`inbound.read_message` first: a message passes on to the SDK's reader unchanged, a refused one is
answered on stdout with the error the spec gives it and never reaches the SDK.

stdin is claimed the way the SDK claims it (fd 0 then points at the null device, so nothing a
handler starts can read the protocol's bytes); stdout stays the SDK's, its pipe widened first
(`widen_pipe`) so that a large answer does not wait for the client to drain it.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import _claim_fd, _open_stdin_diversion, _UnownedTextWrapper, stdio_server
from mcp.shared._context_streams import ContextSendStream
from mcp.shared.message import SessionMessage

from .inbound import Refusal, log_refusal, read_message


class _Answers:
    """Where refusals are answered: the server's own write stream, once the SDK has opened it."""

    def __init__(self) -> None:
        self.stream: ContextSendStream[SessionMessage] | None = None
        self.ready = anyio.Event()

    def open(self, stream: ContextSendStream[SessionMessage]) -> None:
        self.stream = stream
        self.ready.set()

    async def refuse(self, refusal: Refusal) -> None:
        log_refusal(refusal, "stdio")
        if refusal.answer is None:
            return
        await self.ready.wait()
        assert self.stream is not None
        try:
            await self.stream.send(SessionMessage(refusal.answer))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return  # the server is shutting down; nobody reads the answer


async def checked_lines(lines: AsyncIterable[str], answers: _Answers) -> AsyncIterator[str]:
    """The lines that hold a JSON-RPC message, unchanged; the others answered and left out."""
    async for line in lines:
        if not line.strip():
            continue
        found = read_message(line)
        if isinstance(found, Refusal):
            await answers.refuse(found)
        else:
            yield line


PIPE_BYTES = 1 << 20
"""The answers' pipe is made this large where the system allows it (Linux: up to
/proc/sys/fs/pipe-max-size, 1 MiB by default): a top-100 page (~100 KB) is written in one
call instead of waiting for the client to drain a 64 KiB pipe (docs/performance.md)."""


def widen_pipe(fd: int, size: int = PIPE_BYTES) -> int | None:
    """Make the pipe on `fd` hold `size` bytes; its size after (None: not a pipe, or no such
    call on this system: nothing changes)."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    except (ImportError, AttributeError, OSError, ValueError):
        return None


async def serve_stdio(mcp: MCPServer) -> None:
    """Run `mcp` over the process's stdin and stdout until stdin ends."""
    widen_pipe(1)  # the answers: the SDK serves them from a copy of fd 1, the same pipe
    buffer, release = _claim_fd(0, sys.stdin, "rb", _open_stdin_diversion)
    try:
        stdin = anyio.wrap_file(_UnownedTextWrapper(buffer, encoding="utf-8", errors="replace"))
        answers = _Answers()
        lines = checked_lines(stdin, answers)
        async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
            answers.open(write_stream)
            lowlevel = mcp._lowlevel_server  # as MCPServer.run_stdio_async drives it
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    finally:
        if release is not None:
            release()
