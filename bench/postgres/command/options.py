"""`knowledge-mcp bench --database-url …`'s options, checked: each wrong one is one sentence."""

from __future__ import annotations

import argparse

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.storage.postgres.pool import check_url

from .full import PgBenchOptions
from .throughput import LoadPlan


def worker_counts(text: str) -> tuple[int, ...]:
    """`--workers`: comma-separated counts 1..16, or "0" for no HTTP phase."""
    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        counts = (-1,)
    if counts == (0,):
        return ()
    if not counts or not all(1 <= n <= 16 for n in counts):
        raise KnowledgeError("--workers: comma-separated worker counts, each 1..16 (e.g. 1,2), or 0")
    return counts


def pg_bench_options(args: argparse.Namespace, clients: tuple[int, ...]) -> PgBenchOptions:
    if not 1 <= args.rounds <= 10:
        raise KnowledgeError("--rounds: must be 1..10")
    if not 0 <= args.warmup_seconds <= 600:
        raise KnowledgeError("--warmup-seconds: must be 0..600")
    plan = LoadPlan(
        workers=worker_counts(args.workers),
        clients=clients,
        seconds=args.load_seconds,
        warmup_s=args.warmup_seconds,
        rounds=args.rounds,
        raw=args.raw,
    )
    return PgBenchOptions(
        database_url=check_url(args.database_url),
        size=args.size,
        seed=args.seed,
        mode=args.mode,
        plan=plan,
        write_cost=not args.no_write_cost,
    )
