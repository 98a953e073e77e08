"""The search tools' latency on the PostgreSQL item store against SQLite:
python -m experiments.postgres.serving --database-url postgresql://… [--size N].

Loads the bench's synthetic corpus (`bench/corpus.py`: about `--size` chunks across the five
sources) into the SQLite files as the bench does, copies it into the PostgreSQL store as
`migrate --to` does, then serves both with two in-memory servers (`build_server`, a real MCP
client each) and times every corpus query through each source's `*_search` and through
`knowledge_search` (lexical, a page of 10), after one warm-up pass. Reports p50/p95 per tool
and store, and how many of the queries' top-10 uris the two stores agree on.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from pydantic import SecretStr

from knowledge_mcp.bench.corpus import CorpusStream
from knowledge_mcp.bench.evaluation import percentile
from knowledge_mcp.bench.loading import USER, load
from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.registry import SOURCE_NAMES, get_source
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.postgres.copying import copy_source
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import check_url, open_pg
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS, drop_user, partition_name

TOOLS = [f"{name}_search" for name in SOURCE_NAMES] + ["knowledge_search"]


async def copy_all(data_dir: Path, url: str) -> float:
    """Every source's SQLite items into the store (as `migrate --to`); the seconds it took."""
    pg = await open_pg(url)
    started = time.perf_counter()
    try:
        await migrate(pg, COMPONENT, MIGRATIONS)
        await drop_user(pg, USER)
        for name in SOURCE_NAMES:
            source = get_source(name)
            lite = await open_database(database_path(data_dir, USER, name), source.migrations)
            try:
                await copy_source(lite, pg, source, USER)
            finally:
                await lite.close()
        for table in ("pg_items", "pg_chunks", "pg_posting_blocks", "pg_term_docs"):
            # fresh statistics and visibility map, as autovacuum leaves them once it catches up: just
            # after a bulk copy the planner scans a source's whole postings for one word
            await pg.write(f"VACUUM (ANALYZE) {partition_name(table, USER)}")
    finally:
        await pg.close()
    return time.perf_counter() - started


async def timed(client: Client, tool: str, query: str) -> tuple[float, list[str]]:
    started = time.perf_counter()
    result = await client.call_tool(tool, {"query": query, "mode": "lexical", "limit": 10})
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise RuntimeError(f"{tool} {query!r}: {getattr(result.content[0], 'text', '')}")
    return elapsed, [str(r["uri"]) for r in result.structured_content["results"]]


async def measure(url: str, size: int, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        data_dir = Path(folder)
        stream = CorpusStream(size, seed)
        await load(stream, data_dir)
        copy_s = await copy_all(data_dir, url)
        queries = [q for _, q in stream.corpus.queries]
        report: dict[str, Any] = {"chunks": sum(stream.corpus.chunk_counts.values()), "queries": len(queries)}
        report["copy_s"] = round(copy_s, 1)
        stores: dict[str, dict[str, list[list[str]]]] = {}
        for store in ("sqlite", "postgresql"):
            settings = Settings(
                data_dir=data_dir,
                item_store=store,
                database_url=SecretStr(url) if store == "postgresql" else None,
                embed_in_background=False,
                log_level="WARNING",
                rate_limit_per_minute=0,
            )
            mcp, host = build_server(settings)
            try:
                async with Client(mcp) as client:
                    report[store], stores[store] = await timings(client, queries)
            finally:
                await host.close()
        report["same_top10"] = {
            tool: sum(a == b for a, b in zip(stores["sqlite"][tool], stores["postgresql"][tool], strict=True))
            for tool in TOOLS
        }
        report["differing"] = differing(queries, stores)
        return report


def differing(queries: list[str], stores: dict[str, dict[str, list[list[str]]]]) -> dict[str, Any]:
    """Per tool, the first three queries whose top 10 differ, with how much of it the stores share."""
    out: dict[str, Any] = {}
    for tool in TOOLS:
        pairs = zip(queries, stores["sqlite"][tool], stores["postgresql"][tool], strict=True)
        out[tool] = [
            {"query": q, "shared": len(set(a) & set(b)), "sqlite": len(a), "postgresql": len(b)}
            for q, a, b in pairs
            if a != b
        ][:3]
    return out


async def timings(client: Client, queries: list[str]) -> tuple[dict[str, Any], dict[str, list[list[str]]]]:
    figures: dict[str, Any] = {}
    answers: dict[str, list[list[str]]] = {}
    for tool in TOOLS:
        for query in queries:  # warm-up: caches, the memory copy, the pool's connections
            await timed(client, tool, query)
        runs = [await timed(client, tool, query) for query in queries]
        ms = sorted(r[0] for r in runs)
        figures[tool] = {"p50_ms": round(percentile(ms, 50), 2), "p95_ms": round(percentile(ms, 95), 2)}
        answers[tool] = [r[1] for r in runs]
    return figures, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True, help="postgresql://… (its user 'local' is replaced)")
    parser.add_argument("--size", type=int, default=20_000, help="about this many chunks (default 20000)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(json.dumps(anyio.run(measure, check_url(args.database_url), args.size, args.seed), indent=2))


if __name__ == "__main__":
    main()
