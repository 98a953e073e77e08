"""Several HTTP workers sharing state in PostgreSQL, measured (issue 18).

    python -m knowledge_mcp.bench.workers.load --database-url postgresql://… [--size N] [--clients 8,16]
        [--seconds 10] [--warmup 5] [--workers 1,2] [--raw] [--ops 500] [--cache-dir D] [--json]

One synthetic corpus (the `bench` corpus, imported once) is served by `serve --transport http
--workers N` with the PostgreSQL backend for each N in turn, warmed up (`--warmup` seconds of
load, unmeasured: each worker builds its in-memory copies on its first searches), and loaded by
authenticated SDK clients (`http.load`: `knowledge_search` back to back, every client its own JWT
for one user; with `--raw`, plain stateless POSTs, which cost the client far less CPU): calls/s
and latency per level. The clients run on the same machine. Then session
operations in process, the SQLite store against the PostgreSQL one: `open` and `record_results`
(10 URIs) on one session of one user, p50/p95.
The database needs CREATE rights: the run makes a database of its own and drops it after.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
import psycopg

from knowledge_mcp.server.context import DatabasePool
from knowledge_mcp.server.postgres.sessions import PgSessionStore
from knowledge_mcp.server.postgres.state import SharedState
from knowledge_mcp.server.sessions.store import SessionStore

from .. import http as bench_http
from ..evaluation import percentile
from ..phases import USER as CORPUS_USER
from ..run import BenchOptions, prepare

USER = CORPUS_USER
"""Who the clients search as: the user the corpus is imported for (`bench.phases.USER`)."""


@contextmanager
def scratch_database(url: str) -> Iterator[str]:
    """A fresh database beside the one `url` names, dropped afterwards."""
    name = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]  # a generated name
    try:
        yield urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]


async def http_levels(
    data_dir: Path, url: str, workers: int, queries: list[str], args: Any
) -> dict[str, Any]:
    levels = []
    extra = ["--workers", str(workers)]
    env = {"KNOWLEDGE_MCP_DATABASE_URL": url}
    async with bench_http.served(data_dir, auth=True, extra=extra, settings_env=env) as server:
        # every worker builds its in-memory copies on its first searches: not what is measured
        await bench_http.load(bench_http.http_client, server.url, server.mint(USER, 8), queries, args.warmup)
        for n in args.clients:
            tokens = server.mint(USER, n)
            levels.append(
                await bench_http.load(bench_http.http_client, server.url, tokens, queries, args.seconds)
            )
    return {"workers": workers, "levels": levels}


META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def raw_load(url: str, tokens: list[str], queries: list[str], seconds: float) -> dict[str, Any]:
    """len(tokens) clients, each one stateless 2026-07-28 `tools/call` POST after another (no SDK:
    the client's own CPU is what the SDK client spends on this machine's second core)."""
    latencies: list[float] = []
    errors = empty = 0
    end = time.perf_counter() + seconds

    async def one(index: int, token: str) -> None:
        nonlocal errors, empty
        headers = {
            "authorization": f"Bearer {token}",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "knowledge_search",
        }
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            n = index * 7
            while time.perf_counter() < end:
                arguments = {"query": queries[n % len(queries)], "limit": 10, "seen": "show"}
                n += 1
                body = {"jsonrpc": "2.0", "id": n, "method": "tools/call"}
                body["params"] = {"name": "knowledge_search", "arguments": arguments, "_meta": META}
                t0 = time.perf_counter()
                response = await http.post(url, json=body)
                if response.status_code != 200 or '"isError":true' in response.text:
                    errors += 1
                else:
                    latencies.append((time.perf_counter() - t0) * 1000)
                    empty += no_results(response.text)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for index, token in enumerate(tokens):
            tg.start_soon(one, index, token)
    elapsed = time.perf_counter() - started
    return {
        "clients": len(tokens),
        "calls": len(latencies),
        "calls_per_s": round(len(latencies) / elapsed, 2),
        "empty": empty,
        "errors": errors,
        "latency_ms": stats(latencies),
    }


def no_results(text: str) -> bool:
    """A `tools/call` answer (JSON) whose `knowledge_search` found nothing: a load on a user
    without items measures nothing worth having (the calls must search the corpus)."""
    try:
        return not json.loads(text)["result"]["structuredContent"]["results"]
    except (ValueError, KeyError, TypeError):
        return False


def stats(ms: list[float]) -> dict[str, float]:
    return {f"p{p}": round(percentile(ms, p), 3) for p in (50, 95)}


async def session_ops(store: Any, ops: int) -> dict[str, Any]:
    """`open` then `record_results` (10 URIs), `ops` times on one session; ms per operation."""
    opened: list[float] = []
    recorded: list[float] = []
    for n in range(ops):
        t0 = time.perf_counter()
        session = await store.open(USER, "bench-session")
        t1 = time.perf_counter()
        await session.record_results(f"query {n}", [f"notes://{n}-{k}" for k in range(10)])
        t2 = time.perf_counter()
        opened.append((t1 - t0) * 1000)
        recorded.append((t2 - t1) * 1000)
    return {"ops": ops, "open_ms": stats(opened), "record_results_ms": stats(recorded)}


async def session_backends(url: str, ops: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        pool = DatabasePool()
        try:
            sqlite = await session_ops(SessionStore(Path(folder), pool), ops)
        finally:
            await pool.close()
    state = SharedState(url)
    try:
        postgres = await session_ops(PgSessionStore(state), ops)
    finally:
        await state.close()
    return {"sqlite": sqlite, "postgres": postgres}


async def run(args: Any) -> dict[str, Any]:
    options = BenchOptions(size=args.size, seed=1, cache_dir=args.cache_dir)
    with tempfile.TemporaryDirectory() as folder, scratch_database(args.database_url) as url:
        data_dir = Path(folder) / "data"
        corpus, _, _ = await prepare(options, data_dir)
        queries = [q for _, q in corpus.queries]
        http = [await http_levels(data_dir, url, n, queries, args) for n in args.workers]
        sessions = await session_backends(url, args.ops)
    return {"size": args.size, "seconds_per_level": args.seconds, "http": http, "sessions": sessions}


def counts(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(prog="python -m knowledge_mcp.bench.workers.load", description=__doc__)
    parser.add_argument("--database-url", required=True, help="a PostgreSQL server (CREATE DATABASE rights)")
    parser.add_argument("--size", type=int, default=10_000, help="corpus chunks (default 10000)")
    parser.add_argument("--clients", type=counts, default=[8, 16], help="concurrency levels (default 8,16)")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per level (default 10)")
    parser.add_argument(
        "--warmup", type=float, default=5.0, help="seconds of unmeasured load first (default 5)"
    )
    parser.add_argument("--workers", type=counts, default=[1, 2], help="worker counts (default 1,2)")
    parser.add_argument("--ops", type=int, default=500, help="session operations per backend (default 500)")
    parser.add_argument("--cache-dir", type=Path, help="reuse the imported corpus from here")
    parser.add_argument("--raw", action="store_true", help="load with plain HTTP POSTs, not SDK clients")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args(argv)
    report = anyio.run(run, args)
    if args.json:
        out(json.dumps(report))
        return 0
    for entry in report["http"]:
        for level in entry["levels"]:
            out(
                f"workers={entry['workers']} clients={level['clients']}: {level['calls_per_s']} calls/s, "
                f"p50 {level['latency_ms']['p50']} ms, p95 {level['latency_ms']['p95']} ms, "
                f"errors {level['errors']}"
            )
    for backend, figures in report["sessions"].items():
        out(f"{backend}: open {figures['open_ms']} ms, record_results {figures['record_results_ms']} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
