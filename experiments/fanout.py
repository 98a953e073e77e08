"""knowledge_search against its slowest source, and every page it returns, on a bench corpus.

    python -m experiments.fanout --data-dir DIR --cache-dir CACHE --size 100000 [--ratio N]
        [--pages OUT.json] [--profile N]

The bench's corpus of `--size` chunks is copied from `--cache-dir` (as `knowledge-mcp bench
--cache-dir` keeps it) into `--data-dir` once, and reused from there. `--ratio N` runs the bench's
own fan-out phase (`bench_aggregator(..., fanout=True)`: every query through `knowledge_search`,
then through each source's own tool, on one in-memory client) N times and prints each run's
`fanout_ratio` and latencies. `--pages` writes every page `knowledge_search` returns for the
bench's queries in several shapes (top 10; 5 at offset 5; notes and media only; recent first),
to compare two trees' rankings (`--compare A.json B.json`). `--profile N` prints cProfile's
top functions over N calls. Prints JSON.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from loguru import logger
from mcp import Client

from knowledge_mcp.bench import loading
from knowledge_mcp.bench.corpus import Corpus, default_query_count
from knowledge_mcp.bench.phases import bench_aggregator
from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings

SHAPES: list[dict[str, Any]] = [
    {"limit": 10},
    {"limit": 5, "offset": 5},
    {"limit": 10, "sources": ["notes", "media"]},
    {"limit": 10, "order_by": "recent"},
]
VOLATILE = {"elapsed_ms", "took_ms"}


def corpus_in(data_dir: Path, cache_dir: Path, size: int, seed: int = 1) -> Corpus:
    """The bench corpus of `size`, copied from the cache into `data_dir` unless already there."""
    key = loading.cache_key(size, seed, default_query_count(size))
    manifest_file = cache_dir / key / loading.MANIFEST
    if not manifest_file.is_file():
        sys.exit(f"no cached corpus {key} in {cache_dir}: run knowledge-mcp bench --cache-dir first")
    if not (data_dir / ".restored").exists():
        loading.restore(cache_dir, key, data_dir)
        (data_dir / ".restored").write_text(key)
    return loading.corpus_from_manifest(json.loads(manifest_file.read_text(encoding="utf-8")))


async def ratios(corpus: Corpus, data_dir: Path, runs: int) -> list[dict[str, Any]]:
    out = []
    for _ in range(runs):
        report = await bench_aggregator(corpus, data_dir, fanout=True)
        out.append(
            {
                "fanout_ratio": report["fanout_ratio"],
                "latency_ms": report["latency_ms"],
                "server_ms": report["server_ms"],
                "source_tools_ms": report["source_tools_ms"],
            }
        )
    return out


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


async def pages(corpus: Corpus, data_dir: Path) -> list[Any]:
    mcp, host = build_server(Settings(data_dir=data_dir, rate_limit_per_minute=0))
    out: list[Any] = []
    try:
        async with Client(mcp) as client:
            await client.call_tool("knowledge_search", {"query": corpus.queries[0][1], "seen": "show"})
            await host.pool.settled()
            for _, q in corpus.queries:
                for shape in SHAPES:
                    result = await client.call_tool("knowledge_search", {"query": q, "seen": "show"} | shape)
                    text = [getattr(c, "text", None) for c in result.content]
                    out.append([q, shape, result.is_error, _clean(result.structured_content), text])
    finally:
        await host.pool.close()
    return out


async def profile(corpus: Corpus, data_dir: Path, calls: int) -> str:
    mcp, host = build_server(Settings(data_dir=data_dir, rate_limit_per_minute=0))
    queries = [q for _, q in corpus.queries]
    try:
        async with Client(mcp) as client:
            for q in queries[:20]:
                await client.call_tool("knowledge_search", {"query": q, "seen": "show"})
            await host.pool.settled()
            profiler = cProfile.Profile()
            t0 = time.perf_counter()
            profiler.enable()
            for q in queries[:: max(1, len(queries) // calls)][:calls]:
                await client.call_tool("knowledge_search", {"query": q, "limit": 10, "seen": "show"})
            profiler.disable()
            wall = time.perf_counter() - t0
    finally:
        await host.pool.close()
    stream = __import__("io").StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    stats.sort_stats("cumulative").print_stats(60)
    stats.sort_stats("tottime").print_stats(40)
    stats.print_callers("posix.stat|put_nowait|model_validate")
    return f"wall {wall * 1000 / calls:.1f} ms/call\n" + stream.getvalue()


def compare(a: Path, b: Path) -> dict[str, Any]:
    left, right = json.loads(a.read_text()), json.loads(b.read_text())
    differ = [x[:2] for x, y in zip(left, right, strict=True) if x != y]
    return {"pages": len(left), "different": len(differ), "first": differ[:5]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/s10e-cache"))
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--ratio", type=int, default=0)
    parser.add_argument("--pages", type=Path)
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--compare", type=Path, nargs=2)
    args = parser.parse_args()
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    if args.compare:
        print(json.dumps(compare(*args.compare)))
        return
    args.data_dir.mkdir(parents=True, exist_ok=True)
    corpus = corpus_in(args.data_dir, args.cache_dir, args.size)
    report: dict[str, Any] = {}
    if args.pages:
        args.pages.write_text(json.dumps(anyio.run(pages, corpus, args.data_dir)))
        report["pages"] = str(args.pages)
    if args.ratio:
        report["runs"] = anyio.run(ratios, corpus, args.data_dir, args.ratio)
    if args.profile:
        print(anyio.run(profile, corpus, args.data_dir, args.profile), file=sys.stderr)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
