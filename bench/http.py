"""The bench's network phases: the real server as a subprocess, real SDK clients, many at once.

`served` starts `knowledge-mcp serve --transport http` on a free loopback port against the
bench data dir — with `--no-auth` for the end-to-end figure, or with a throw-away JWT secret
for the load figure, where every client presents its own freshly minted JWT. Clients come
from a `ClientFactory` chosen by transport name (`CLIENTS`): a transport the server grows
later (WebSocket) is one more factory here, and the same load loop drives it.

`load` runs N clients at once against the server for a fixed time. Each client connects
(initialize; not timed), waits for the others, then issues `knowledge_search` calls back to
back until the time is up. Throughput counts completed successful calls over the window from
the common start to the last completion (calls started before the end run to completion);
latency is per call; errors are counted by kind (a tool error, or the exception type) and
never stop the run; `partial` counts answers that lack a source which timed out.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import SecretStr

from knowledge_mcp.server.auth.tokens import mint_token
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.transports.ws.client import websocket_client

from .evaluation import percentile

START_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 120.0

ClientFactory = Callable[[str, str | None], AbstractAsyncContextManager[Client]]
"""(server url, bearer token or None) -> a connected MCP client for one session."""


@asynccontextmanager
async def http_client(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT_S) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


@asynccontextmanager
async def ws_client(url: str, token: str | None) -> AsyncIterator[Client]:
    async with Client(websocket_client(url, token)) as client:
        yield client


CLIENTS: dict[str, ClientFactory] = {"http": http_client, "ws": ws_client}
"""Client factory per transport (`serve --transport` of the same name)."""
PATHS = {"http": ("http", "/mcp"), "ws": ("ws", "/ws")}


@dataclass
class Served:
    url: str
    process: subprocess.Popen[bytes]
    secret: str | None
    peak_rss_mb: float | None = None
    log: Any = None
    """The server's stdout and stderr so far (a binary temporary file), while it runs."""

    def log_text(self) -> str:
        if self.log is None:
            return ""
        self.log.seek(0)
        return str(self.log.read().decode(errors="replace"))

    def mint(self, user: str, count: int) -> list[str]:
        """One JWT per client, all for `user` (so every client searches the same data)."""
        if self.secret is None:
            return []
        settings = Settings(jwt_secret=SecretStr(self.secret))
        return [mint_token(settings, user, 3600) for _ in range(count)]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def peak_rss_of(pid: int) -> float | None:
    """A live process's peak resident set (VmHWM) in MB, where /proc has it."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def server_env() -> dict[str, str]:
    """The environment for a server subprocess: none of the caller's KNOWLEDGE_MCP_* settings
    (a config file or secret of theirs must not change what is measured), quiet logs, no rate
    limits, no background embedding."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWLEDGE_MCP_")}
    env["KNOWLEDGE_MCP_LOG_LEVEL"] = "WARNING"
    # Every load client is the one bench user: per-user rate limits would measure the limiter.
    env["KNOWLEDGE_MCP_RATE_LIMIT_PER_MINUTE"] = "0"
    # A corpus without vectors would be embedded while it is measured (and turn hybrid midway).
    env["KNOWLEDGE_MCP_EMBED_IN_BACKGROUND"] = "false"
    return env


@asynccontextmanager
async def served(
    data_dir: Path,
    *,
    auth: bool,
    transport: str = "http",
    extra: Sequence[str] = (),
    settings_env: dict[str, str] | None = None,
) -> AsyncIterator[Served]:
    """The server over `transport` (http or ws) on a free loopback port until the block ends;
    its log on failure. `extra`: more `serve` flags (`--workers 2`); `settings_env`: settings
    given as KNOWLEDGE_MCP_* variables (a database URL stays off the command line)."""
    port = free_port()
    secret = secrets.token_urlsafe(32) if auth else None
    env = server_env() | (settings_env or {})
    if secret is not None:
        env["KNOWLEDGE_MCP_JWT_SECRET"] = secret
    command = [
        sys.executable,
        "-m",
        "knowledge_mcp",
        "serve",
        "--transport",
        transport,
        "--data-dir",
        str(data_dir),
    ]
    command += ["--host", "127.0.0.1", "--port", str(port), *([] if auth else ["--no-auth"]), *extra]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            await _wait_healthy(process, f"http://127.0.0.1:{port}/healthz", log)
            scheme, path = PATHS[transport]
            server = Served(f"{scheme}://127.0.0.1:{port}{path}", process, secret, log=log)
            yield server
            server.peak_rss_mb = peak_rss_of(process.pid)
        finally:
            stop_process(process, timeout=15)


def stop_process(process: subprocess.Popen[bytes], timeout: float) -> None:
    """End a server process: politely, then firmly (each step waits up to `timeout` s)."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


async def _wait_healthy(process: subprocess.Popen[bytes], url: str, log: Any) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    async with httpx2.AsyncClient(timeout=2.0) as http:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            try:
                if (await http.get(url)).status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            await anyio.sleep(0.1)
    log.seek(0)
    tail = log.read().decode(errors="replace")[-2000:]
    raise RuntimeError(f"bench: the HTTP server did not come up at {url}: {tail}")


async def search_calls(
    factory: ClientFactory, url: str, token: str | None, queries: Sequence[str]
) -> list[float]:
    """One client, one session: each query once, in order; milliseconds per call."""
    latencies: list[float] = []
    async with factory(url, token) as client:
        for q in queries:
            t0 = time.perf_counter()
            result = await client.call_tool("knowledge_search", {"query": q, "limit": 10, "seen": "show"})
            latencies.append((time.perf_counter() - t0) * 1000)
            if result.is_error:
                raise RuntimeError("bench: knowledge_search answered a tool error end to end")
    return latencies


def partial(result: Any) -> bool:
    """An answer missing a source that did not answer within `source_timeout_s`."""
    warnings = (result.structured_content or {}).get("warnings") or []
    return any("no answer within" in str(w) for w in warnings)


@dataclass
class LoadRun:
    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    partial: int = 0
    empty: int = 0
    last_done: float = 0.0


async def load(
    factory: ClientFactory, url: str, tokens: Sequence[str | None], queries: Sequence[str], seconds: float
) -> dict[str, Any]:
    """len(tokens) clients at once for `seconds`; throughput, latency and errors."""
    run = LoadRun()
    go = anyio.Event()
    connected = 0
    window: dict[str, float] = {}

    async def one(index: int, token: str | None) -> None:
        nonlocal connected
        try:
            async with factory(url, token) as client:
                connected += 1
                await go.wait()
                n = index * 7  # clients start at different queries
                while time.perf_counter() < window["end"]:
                    q = queries[n % len(queries)]
                    n += 1
                    t0 = time.perf_counter()
                    try:
                        with anyio.fail_after(CALL_TIMEOUT_S):
                            result = await client.call_tool(
                                "knowledge_search", {"query": q, "limit": 10, "seen": "show"}
                            )
                    except Exception as exc:  # counted, not fatal: the figure is how many fail
                        run.errors[type(exc).__name__] += 1
                        continue
                    run.last_done = time.perf_counter()
                    if result.is_error:
                        run.errors["tool_error"] += 1
                    else:
                        run.latencies.append((run.last_done - t0) * 1000)
                        run.partial += partial(result)
                        run.empty += not (result.structured_content or {}).get("results")
        except Exception as exc:  # a client that cannot connect is an error, not a crash
            run.errors[f"connect:{type(exc).__name__}"] += 1

    async with anyio.create_task_group() as tg:
        for index, token in enumerate(tokens):
            tg.start_soon(one, index, token)
        t_connect = time.perf_counter()
        while connected + sum(v for k, v in run.errors.items() if k.startswith("connect:")) < len(tokens):
            if time.perf_counter() - t_connect > START_TIMEOUT_S:
                break
            await anyio.sleep(0.01)
        connect_s = time.perf_counter() - t_connect
        window["start"] = time.perf_counter()
        window["end"] = window["start"] + seconds
        go.set()
    elapsed = max(run.last_done - window["start"], 1e-9)
    return {
        "clients": len(tokens),
        "connected": connected,
        "connect_s": round(connect_s, 3),
        "seconds": round(elapsed, 3),
        "calls": len(run.latencies),
        "calls_per_s": round(len(run.latencies) / elapsed, 2),
        "partial": run.partial,
        "empty": run.empty,
        "errors": sum(run.errors.values()),
        "error_kinds": dict(run.errors),
        "latency_ms": stats_of(run.latencies),
    }


def stats_of(ms: list[float]) -> dict[str, float]:
    if not ms:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0}
    return {f"p{p}": round(percentile(ms, p), 3) for p in (50, 95, 99)}
