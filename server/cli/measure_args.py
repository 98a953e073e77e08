"""`knowledge-mcp bench`'s arguments and their check (the SQLite bench's, and `--database-url`'s)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from knowledge_mcp.sources.errors import KnowledgeError


def add_parser(sub: Any) -> None:
    """The `bench` verb on the CLI's subparsers."""
    bench = sub.add_parser("bench", help="speed and memory on a synthetic corpus")
    bench.add_argument("--size", type=int, default=10_000, help="about this many chunks (default 10000)")
    bench.add_argument("--json", action="store_true", help="print the report as one JSON object")
    bench.add_argument("--seed", type=int, default=1, help="corpus seed (default 1)")
    bench.add_argument(
        "--cache-dir", type=Path, help="keep imported corpora here and reuse them (default: none)"
    )
    bench.add_argument("--load", action="store_true", help="also run concurrent authenticated HTTP clients")
    bench.add_argument(
        "--clients",
        default="1,10,50",
        help="--load (and --database-url) concurrency levels, comma-separated (default 1,10,50)",
    )
    bench.add_argument(
        "--load-seconds",
        type=float,
        default=10.0,
        help="--load (and --database-url) time per level (default 10)",
    )
    bench.add_argument(
        "--load-transport",
        choices=["http", "ws"],
        default="http",
        help="--load over HTTP or WebSocket (default http)",
    )
    bench.add_argument(
        "--dense",
        action="store_true",
        help="also measure embedding speed, hybrid search (synthetic vectors) and the dense stage alone",
    )
    bench.add_argument(
        "--dense-vectors",
        type=int,
        default=1_000_000,
        help="--dense: vectors for the dense stage alone (default 1000000)",
    )
    bench.add_argument(
        "--embed-beir",
        type=Path,
        help="only the embed bench: windows/s of the embedder now against before, on this BEIR corpus",
    )
    bench.add_argument(
        "--embed-windows", type=int, default=500, help="--embed-beir: windows per timed run (default 500)"
    )
    _pg_arguments(bench)


def _pg_arguments(bench: argparse.ArgumentParser) -> None:
    """`bench --database-url`: the bench on the PostgreSQL item store (`bench/postgres/full.py`)."""
    bench.add_argument(
        "--database-url",
        default=os.environ.get("KNOWLEDGE_MCP_DATABASE_URL"),
        help="postgresql://…: bench the PostgreSQL item store in a scratch database beside this one "
        "(default: KNOWLEDGE_MCP_DATABASE_URL; unset: the SQLite bench)",
    )
    bench.add_argument(
        "--mode",
        choices=["lexical", "hybrid"],
        default="lexical",
        help="with --database-url: the search mode timed (default lexical; an answer that falls back "
        "to lexical is counted as degraded)",
    )
    bench.add_argument(
        "--workers",
        default="1,2",
        help="with --database-url: HTTP worker counts, or 0 for none (default 1,2)",
    )
    bench.add_argument(
        "--rounds", type=int, default=2, help="with --database-url: runs of every worker count (default 2)"
    )
    bench.add_argument("--warmup-seconds", type=float, default=5.0, help="with --database-url (default 5)")
    bench.add_argument("--raw", action="store_true", help="with --database-url: plain POSTs, not SDK clients")
    bench.add_argument(
        "--no-write-cost",
        action="store_true",
        help="with --database-url: skip writing the corpus again without bm25",
    )


def bench_options(args: argparse.Namespace) -> Any:
    from knowledge_mcp.bench.run import BenchOptions

    if args.size < 50:
        raise KnowledgeError("--size: must be at least 50")
    try:
        clients = tuple(int(part) for part in args.clients.split(","))
    except ValueError:
        clients = ()
    if not clients or not all(1 <= n <= 1000 for n in clients):
        raise KnowledgeError("--clients: comma-separated client counts, each 1..1000 (e.g. 1,10,50)")
    if not 0.5 <= args.load_seconds <= 3600:
        raise KnowledgeError("--load-seconds: must be 0.5..3600")
    if not 1_000 <= args.dense_vectors <= 10_000_000:
        raise KnowledgeError("--dense-vectors: must be 1000..10000000")
    return BenchOptions(
        size=args.size,
        seed=args.seed,
        cache_dir=args.cache_dir,
        load=args.load,
        clients=clients,
        load_seconds=args.load_seconds,
        transport=args.load_transport,
        dense=args.dense,
        dense_vectors=args.dense_vectors,
    )
