"""`knowledge-mcp bench`: speed and memory on a synthetic corpus (DESIGN §11).

The corpus (`corpus`) streams into a throw-away data dir through each source's real
importer (`loading`, batched, optionally cached); the same queries then run through
each source's search, the aggregator (the real server through the in-memory MCP client),
each retrieval mode of get, raw SQLite FTS5 on the same databases (the floor), end to end
over stdio and over HTTP, and with `--load` N authenticated HTTP clients at once
(`phases`, `http`). Every phase runs a fixed number of queries whatever the size, so a
million-chunk run is spent importing, not re-searching.
"""

from __future__ import annotations

import json
import resource
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.db import database_path, open_database

from . import loading
from .corpus import Corpus, CorpusStream, default_query_count
from .dense.speed import bench_dense
from .phases import USER, bench_aggregator, bench_http_e2e, bench_load, bench_sources, bench_stdio
from .report import print_table


@dataclass(frozen=True)
class BenchOptions:
    size: int
    seed: int = 1
    cache_dir: Path | None = None
    load: bool = False
    clients: tuple[int, ...] = (1, 10, 50)
    load_seconds: float = 10.0
    transport: str = "http"
    dense: bool = False
    dense_vectors: int = 1_000_000


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


async def prepare(options: BenchOptions, data_dir: Path) -> tuple[Corpus, dict[str, Any], dict[str, Any]]:
    """The corpus imported into `data_dir` (or copied from the cache): corpus, imports, setup."""
    queries = default_query_count(options.size)
    key = loading.cache_key(options.size, options.seed, queries)
    if options.cache_dir is not None:
        t0 = time.perf_counter()
        manifest = loading.restore(options.cache_dir, key, data_dir)
        if manifest is not None:
            setup = {"cache": "hit", "cache_key": key, "restore_s": round(time.perf_counter() - t0, 2)}
            setup["generate_and_import_s"] = manifest["generate_and_import_s"]
            return loading.corpus_from_manifest(manifest), manifest["import"], setup
    t0 = time.perf_counter()
    stream = CorpusStream(options.size, options.seed, queries)
    pool_s = time.perf_counter() - t0
    imports = await loading.load(stream, data_dir)
    total_s = time.perf_counter() - t0
    setup = {
        "cache": "off" if options.cache_dir is None else "miss",
        "cache_key": key,
        "sentence_pool_s": round(pool_s, 2),
        "generate_and_import_s": round(total_s, 2),
        "batch_chunks": loading.BATCH_CHUNKS,
    }
    if options.cache_dir is not None:
        options.cache_dir.mkdir(parents=True, exist_ok=True)
        manifest = loading.corpus_manifest(stream.corpus, total_s, imports)
        loading.store(options.cache_dir, key, data_dir, manifest)
    return stream.corpus, imports, setup


async def run_bench(options: BenchOptions) -> dict[str, Any]:
    phases: dict[str, float] = {}

    def lap(name: str, t0: float) -> None:
        phases[name] = round(time.perf_counter() - t0, 2)

    with tempfile.TemporaryDirectory(prefix="knowledge-mcp-bench-") as tmp:
        data_dir = Path(tmp)
        t0 = time.perf_counter()
        corpus, imports, setup = await prepare(options, data_dir)
        lap("setup", t0)
        t0 = time.perf_counter()
        dbs = {
            name: await open_database(database_path(data_dir, USER, name), source.migrations)
            for name, source in SOURCES.items()
        }
        try:
            per_source, get = await bench_sources(corpus, dbs)
        finally:
            for db in dbs.values():
                await db.close()
        lap("sources_get_floor", t0)
        t0 = time.perf_counter()
        aggregator = await bench_aggregator(corpus, data_dir, fanout=True)
        lap("aggregator", t0)
        t0 = time.perf_counter()
        stdio = await bench_stdio(corpus, data_dir)
        lap("stdio_e2e", t0)
        t0 = time.perf_counter()
        http = await bench_http_e2e(corpus, data_dir)
        lap("http_e2e", t0)
        load = None
        if options.load:
            t0 = time.perf_counter()
            load = await bench_load(corpus, data_dir, options)
            lap("load", t0)
        dense = None
        if options.dense:
            t0 = time.perf_counter()
            dense = await bench_dense(corpus, data_dir, options.dense_vectors)
            lap("dense", t0)
        disk_mb = round(sum(f.stat().st_size for f in data_dir.rglob("*") if f.is_file()) / 2**20, 1)
    for name, entry in per_source.items():
        entry["import"] = imports[name]
    kinds: dict[str, int] = {}
    for kind, _ in corpus.queries:
        kinds[kind] = kinds.get(kind, 0) + 1
    total_items = sum(corpus.item_counts.values())
    import_s = sum(e["seconds"] for e in imports.values())
    return {
        "size": options.size,
        "seed": options.seed,
        "fingerprint": corpus.fingerprint(),
        "sqlite": sqlite3.sqlite_version,
        "sizes": {
            "items": total_items,
            "chunks": corpus.chunks(),
            "queries": len(corpus.queries),
            "query_kinds": kinds,
            "disk_mb": disk_mb,
        },
        "setup": {
            **setup,
            "import_items_per_s": round(total_items / max(import_s, 1e-9), 1),
            "import_chunks_per_s": round(corpus.chunks() / max(import_s, 1e-9), 1),
        },
        "phases_s": phases,
        "sources": per_source,
        "aggregator": aggregator,
        "get": get,
        "floor_ratio_p50": {name: e["ratio_p50"] for name, e in per_source.items()},
        "fanout_ratio": aggregator["fanout_ratio"],
        "peak_rss_mb": peak_rss_mb(),
        "e2e": {"stdio": stdio},
        "http_e2e": http,
        "load": load,
        "dense": dense,
    }


def run_bench_command(options: BenchOptions, as_json: bool) -> int:
    report = anyio.run(run_bench, options)
    if as_json:
        print(json.dumps(report))
    else:
        print_table(report)
    return 0
