"""The PostgreSQL store's write cost and size: python -m knowledge_mcp.bench.postgres.writes.

Streams the bench's synthetic corpus (`bench/corpus.py`: about `--size` chunks across the five
sources, deterministic) into the store twice, as two throw-away users: once with the bm25
postings and statistics kept current in every write, once without (items and chunks alone).
Reports items and chunks written per second for both, each table's size per chunk and
extrapolated to 1M chunks (and the bm25 tables' together: posting blocks and term counts), and
the latency of the corpus's queries ranked by exact BM25 on every source. The users'
partitions are dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.storage.postgres import bm25
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, check_url, open_pg
from knowledge_mcp.sources.storage.postgres.schema import (
    COMPONENT,
    MIGRATIONS,
    PARTITIONED,
    drop_user,
    partition_name,
)
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter

from ..corpus import BenchItem, CorpusStream
from ..evaluation import spread
from ..loading import batches

MILLION = 1_000_000
SIZE_SQL = "SELECT pg_total_relation_size(%s::regclass) AS bytes"
BM25_TABLES = ("pg_posting_blocks", "pg_term_docs")
"""The tables the bm25 statistics add (their indexes and TOAST included)."""


async def load(db: PgDatabase, user: str, stream: CorpusStream, keep_bm25: bool) -> dict[str, Any]:
    """Write the stream as `user`; seconds spent writing, items and chunks."""
    writers: dict[str, PgItemWriter] = {}
    counts: dict[str, int] = {}
    spent, items, chunks = 0.0, 0, 0
    for batch in batches(stream.items()):
        by_source: dict[str, list[BenchItem]] = {}
        for b in batch:
            by_source.setdefault(b.source, []).append(b)
        for name, group in by_source.items():
            writer = writers.get(name) or writers.setdefault(
                name, PgItemWriter(db, get_source(name), user, bm25=keep_bm25)
            )
            first = counts.get(name, 0)
            counts[name] = first + len(group)
            pairs = [(Path(f"/bench/{name}/{first + k}"), b.item) for k, b in enumerate(group)]
            started = time.perf_counter()
            outcomes = await writer.write_items(pairs)
            spent += time.perf_counter() - started
            if outcomes.count("added") != len(outcomes):
                raise RuntimeError(f"bench write into {name}: expected only new items")
            items += len(group)
            chunks += sum(b.chunk_count for b in group)
    return {
        "seconds": round(spent, 2),
        "items": items,
        "chunks": chunks,
        "items_per_s": round(items / spent, 1),
        "chunks_per_s": round(chunks / spent, 1),
    }


async def sizes(db: PgDatabase, user: str, chunks: int) -> dict[str, Any]:
    """Each table's bytes (heap and indexes), per chunk and extrapolated to 1M chunks."""
    out: dict[str, Any] = {}
    for table in PARTITIONED:
        name = partition_name(table, user)
        await db.write(f"VACUUM (ANALYZE) {name}")
        row = await db.fetchone(SIZE_SQL, (name,))
        total = int(row["bytes"]) if row else 0
        out[table] = {
            "bytes": total,
            "per_chunk": round(total / chunks, 1),
            "per_1m_chunks_gb": round(total / chunks * MILLION / 1e9, 2),
        }
    bm25 = sum(out[t]["bytes"] for t in BM25_TABLES)
    out["bm25"] = {
        "per_chunk": round(bm25 / chunks, 1),
        "per_1m_chunks_gb": round(bm25 / chunks * MILLION / 1e9, 2),
    }
    return out


async def query_latency(db: PgDatabase, user: str, queries: list[tuple[str, str]]) -> dict[str, Any]:
    """p50/p95 ms of one ranking (best 10) of each query on each source: all, and per kind of
    query (words, prefixes, phrases, ...: the corpus's kinds)."""
    took: dict[str, list[float]] = {}
    for kind, text in queries:
        for name in ("notes", "media", "chats", "characters", "prompts"):
            started = time.perf_counter()
            await bm25.rank(db, name, user, parse_query(text), 10, get_source(name).weights)
            took.setdefault(kind, []).append((time.perf_counter() - started) * 1000)
    every = [ms for kind in took.values() for ms in kind]
    return {"all": _latency(every)} | {kind: _latency(ms) for kind, ms in sorted(took.items())}


def _latency(took: list[float]) -> dict[str, float]:
    return {"rankings": len(took), **spread(took)}


async def measure(url: str, size: int, seed: int, keep: bool) -> dict[str, Any]:
    db = await open_pg(url)
    report: dict[str, Any] = {"size": size, "seed": seed}
    try:
        await migrate(db, COMPONENT, MIGRATIONS)
        for mode in ("with_bm25", "without_bm25"):
            user = f"bench-{mode.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
            stream = CorpusStream(size, seed)
            try:
                loaded = await load(db, user, stream, mode == "with_bm25")
                loaded["sizes"] = await sizes(db, user, loaded["chunks"])
                if mode == "with_bm25":
                    loaded["ranking_ms"] = await query_latency(db, user, stream.corpus.queries)
                report[mode] = loaded
            finally:
                if not keep:
                    await drop_user(db, user)
    finally:
        await db.close()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True, help="postgresql://… (a database to write into)")
    parser.add_argument("--size", type=int, default=20_000, help="about this many chunks (default 20000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the two users' partitions")
    args = parser.parse_args(argv)
    report = anyio.run(measure, check_url(args.database_url), args.size, args.seed, args.keep)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
