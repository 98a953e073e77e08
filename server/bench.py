"""`knowledge-mcp bench`: speed and memory on a synthetic corpus (DESIGN §11).

The corpus (`bench_corpus`) is imported into a throw-away data dir through each source's real
`Importer.write_item`; the same queries then run through each source's search, the
aggregator (the real server through the in-memory MCP client), each retrieval mode of get,
raw SQLite FTS5 on the same databases (the floor), and end to end over stdio.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from sources.base import SearchRequest
from sources.db import Database, database_path, open_database
from sources.importing import Importer
from sources.models import Retrieval
from sources.query import parse_query
from sources.registry import SOURCES
from sources.retrieval import Defaults

from .app import build_server
from .bench_corpus import Corpus, generate
from .config import Settings
from .evaluation import percentile

USER = "local"
RAW_SQL = (
    "SELECT rowid, bm25({p}_chunks_fts) FROM {p}_chunks_fts WHERE {p}_chunks_fts MATCH ? ORDER BY 2 LIMIT 10"
)
GET_MODES: dict[str, Retrieval] = {
    "snippet": Retrieval(mode="snippet"),
    "chunk": Retrieval(mode="chunk"),
    "chunk_with_siblings": Retrieval(mode="chunk_with_siblings", max_tokens=1000),
    "full": Retrieval(mode="full", max_tokens=4000),
}
E2E_QUERIES = 36


def stats(ms: list[float]) -> dict[str, float]:
    return {f"p{p}": round(percentile(ms, p), 3) for p in (50, 95, 99)}


async def timed(call: Awaitable[Any]) -> tuple[float, Any]:
    """Milliseconds to await `call`, and its result."""
    t0 = time.perf_counter()
    out = await call
    return (time.perf_counter() - t0) * 1000, out


async def import_corpus(corpus: Corpus, data_dir: Path) -> tuple[dict[str, Database], dict[str, Any]]:
    dbs: dict[str, Database] = {}
    report: dict[str, Any] = {}
    for name, source in SOURCES.items():
        db = dbs[name] = await open_database(database_path(data_dir, USER, name), source.migrations)
        importer = Importer(source, db)
        items = [b for b in corpus.items if b.source == name]
        t0 = time.perf_counter()
        for i, b in enumerate(items):
            await importer.write_item(Path(f"bench/{name}/{i}"), b.item)
        seconds = max(time.perf_counter() - t0, 1e-9)
        chunks = corpus.chunks(name)
        report[name] = {
            "items": len(items),
            "chunks": chunks,
            "seconds": round(seconds, 3),
            "items_per_s": round(len(items) / seconds, 1),
            "chunks_per_s": round(chunks / seconds, 1),
        }
    return dbs, report


async def bench_sources(corpus: Corpus, dbs: dict[str, Database]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Search per source, the raw FTS5 floor on the same database, and get per mode."""
    defaults = Defaults()
    per_source: dict[str, Any] = {}
    gets: dict[str, list[float]] = {mode: [] for mode in GET_MODES}
    for name, source in SOURCES.items():
        db = dbs[name]
        ours: list[float] = []
        raw: list[float] = []
        hits = 0
        firsts: list[tuple[Any, str]] = []
        for _, q in corpus.queries:
            request = SearchRequest(q, limit=10)
            ms, response = await timed(source.search(db, request, defaults))
            ours.append(ms)
            hits += bool(response.results)
            if response.results and len(firsts) < 50:
                firsts.append((response.results[0], q))
            match = parse_query(q).match_expression()
            if match:
                sql = RAW_SQL.format(p=name)
                raw.append((await timed(db.fetchall(sql, (match,))))[0])
        for hit, q in firsts:
            for mode, retrieval in GET_MODES.items():
                call = source.get(db, hit.id, loc=hit.loc, query=q, retrieval=retrieval, defaults=defaults)
                gets[mode].append((await timed(call))[0])
        ours_s, raw_s = stats(ours), stats(raw)
        per_source[name] = {
            "queries": len(ours),
            "queries_with_hits": hits,
            "search_ms": ours_s,
            "raw_fts_ms": raw_s,
            "ratio_p50": round(ours_s["p50"] / max(raw_s["p50"], 1e-6), 2),
            "ratio_p95": round(ours_s["p95"] / max(raw_s["p95"], 1e-6), 2),
        }
    get = {mode: {"calls": len(ms), **stats(ms)} for mode, ms in gets.items()}
    return per_source, get


async def bench_aggregator(corpus: Corpus, data_dir: Path) -> dict[str, Any]:
    """`knowledge_search` over all sources through the real server and the in-memory client.

    `seen: show`, so every query costs the same: with the default `hide`, each source fetches
    as many more hits as the session has already shown, which grows over 200 queries.
    """
    mcp, host = build_server(Settings(data_dir=data_dir))
    latencies: list[float] = []
    try:
        async with Client(mcp) as client:
            for _, q in corpus.queries:
                args = {"query": q, "limit": 10, "seen": "show"}
                latencies.append((await timed(client.call_tool("knowledge_search", args)))[0])
    finally:
        await host.pool.close()
    return {
        "tool": "knowledge_search",
        "seen": "show",
        "queries": len(latencies),
        "latency_ms": stats(latencies),
    }


async def bench_stdio(corpus: Corpus, data_dir: Path) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server", "serve", "--transport", "stdio", "--data-dir", str(data_dir)],
    )
    latencies: list[float] = []
    queries = [q for _, q in corpus.queries][:: max(1, len(corpus.queries) // E2E_QUERIES)][:E2E_QUERIES]
    async with Client(params) as client:
        for q in queries:
            args = {"query": q, "limit": 10, "seen": "show"}
            latencies.append((await timed(client.call_tool("knowledge_search", args)))[0])
    s = stats(latencies)
    return {"tool": "knowledge_search", "queries": len(latencies), "p50": s["p50"], "p95": s["p95"]}


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


async def run_bench(size: int, seed: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    corpus = generate(size, seed)
    generate_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="knowledge-mcp-bench-") as tmp:
        data_dir = Path(tmp)
        dbs, imports = await import_corpus(corpus, data_dir)
        try:
            per_source, get = await bench_sources(corpus, dbs)
        finally:
            for db in dbs.values():
                await db.close()
        aggregator = await bench_aggregator(corpus, data_dir)
        stdio = await bench_stdio(corpus, data_dir)
    for name, entry in per_source.items():
        entry["import"] = imports[name]
    kinds: dict[str, int] = {}
    for kind, _ in corpus.queries:
        kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "size": size,
        "seed": seed,
        "fingerprint": corpus.fingerprint(),
        "sizes": {
            "items": len(corpus.items),
            "chunks": corpus.chunks(),
            "queries": len(corpus.queries),
            "query_kinds": kinds,
            "generate_s": round(generate_s, 2),
        },
        "sources": per_source,
        "aggregator": aggregator,
        "get": get,
        "floor_ratio_p50": {name: e["ratio_p50"] for name, e in per_source.items()},
        "peak_rss_mb": peak_rss_mb(),
        "e2e": {"stdio": stdio, "http": None, "http_reason": "not measured yet (left for later)"},
    }


def print_table(r: dict[str, Any]) -> None:
    s = r["sizes"]
    print(f"bench: {s['items']} items, {s['chunks']} chunks, {s['queries']} queries (seed {r['seed']})")
    print(
        f"{'source':<11} {'items/s':>9} {'chunks/s':>9} {'p50':>7} {'p95':>7} {'p99':>7}"
        f" {'raw p50':>8} {'ratio':>6}"
    )
    for name, e in r["sources"].items():
        ms, imp = e["search_ms"], e["import"]
        print(
            f"{name:<11} {imp['items_per_s']:>9} {imp['chunks_per_s']:>9} {ms['p50']:>7} {ms['p95']:>7}"
            f" {ms['p99']:>7} {e['raw_fts_ms']['p50']:>8} {e['ratio_p50']:>6}"
        )
    a = r["aggregator"]["latency_ms"]
    print(f"aggregator  knowledge_search p50 {a['p50']} ms  p95 {a['p95']} ms  p99 {a['p99']} ms")
    for mode, g in r["get"].items():
        print(f"get {mode:<20} p50 {g['p50']} ms  p95 {g['p95']} ms  p99 {g['p99']} ms")
    e = r["e2e"]["stdio"]
    print(
        f"e2e stdio   {e['queries']} queries p50 {e['p50']} ms  p95 {e['p95']} ms;"
        f"  http: {r['e2e']['http_reason']}"
    )
    print(f"peak RSS {r['peak_rss_mb']} MB")


def run_bench_command(size: int, as_json: bool, seed: int) -> int:
    report = anyio.run(run_bench, size, seed)
    if as_json:
        print(json.dumps(report))
    else:
        print_table(report)
    return 0
