"""`knowledge-mcp bench --database-url postgresql://…`: the bench on the PostgreSQL item store.

In a database of its own beside the one the URL names (made, and dropped at the end): the
bench's synthetic corpus (`bench/corpus.py`, about `size` chunks across the five sources)
written through the store's own writer (`PgItemWriter`, as `knowledge-mcp import` writes with
`item_store = "postgresql"`; `writes.load`) with the bm25 statistics kept current; each
table's size (`writes.sizes`, and its indexes); the tools' latency in process (`tools`);
HTTP throughput with 1, 2, … workers, interleaved (`throughput`); and the write cost of the
bm25 statistics: the same corpus written again, without them, as a throw-away user.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from knowledge_mcp.sources.search.request import SearchMode
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, open_pg
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS, drop_user, partition_name

from ...corpus import CorpusStream
from ...workers import cpu
from ...workers.load import scratch_database
from .. import writes
from .throughput import USER, LoadPlan, throughput
from .tools import tool_latency

MILLION = 1_000_000
ACTIVITY_SQL = """SELECT (SELECT num_timed + num_requested FROM pg_stat_checkpointer) AS checkpoints,
    (SELECT buffers_written FROM pg_stat_checkpointer) AS checkpoint_buffers,
    (SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0)::bigint
        FROM pg_stat_user_tables) AS autovacuums,
    ARRAY(SELECT relname || ' ' || (autovacuum_count + autoanalyze_count) FROM pg_stat_user_tables
        WHERE autovacuum_count + autoanalyze_count > 0 ORDER BY relname) AS autovacuumed,
    (SELECT count(*) FROM pg_stat_activity
        WHERE backend_type = 'autovacuum worker' AND datname = current_database()) AS autovacuum_workers"""
"""What the server does in the background that a timing can overlap: checkpoints done and the
buffers they wrote, the database's tables' autovacuums and autoanalyzes done (together, and per
table that had any), and the autovacuum workers busy in it now (PostgreSQL 17 and later:
`pg_stat_checkpointer`)."""
INDEX_SQL = "SELECT pg_indexes_size(%s::regclass) AS bytes"
VERSION_SQL = "SELECT current_setting('server_version') AS v, pg_backend_pid() AS pid"


@dataclass(frozen=True)
class PgBenchOptions:
    database_url: str
    size: int
    seed: int = 1
    mode: SearchMode = "lexical"
    plan: LoadPlan = field(default_factory=LoadPlan)
    write_cost: bool = True


def per_chunk(total: int, chunks: int) -> dict[str, Any]:
    return {
        "bytes": total,
        "per_chunk": round(total / max(chunks, 1), 1),
        "per_1m_chunks_gb": round(total / max(chunks, 1) * MILLION / 1e9, 2),
    }


def group_of(table: str) -> str:
    """Which part of the store a table is: postings (the bm25 index), vectors, or items."""
    if "posting" in table or "term" in table:
        return "postings"
    return "vectors" if "vector" in table else "items_and_chunks"


def storage(tables: dict[str, Any], indexes: dict[str, int], chunks: int) -> dict[str, Any]:
    """The tables' sizes (heap and indexes) summed into items+chunks, postings, vectors, and
    all indexes, each per chunk and per 1M chunks."""
    groups: dict[str, int] = {}
    for table, entry in tables.items():
        groups[group_of(table)] = groups.get(group_of(table), 0) + int(entry["bytes"])
    out = {name: per_chunk(total, chunks) for name, total in sorted(groups.items())}
    out["indexes"] = per_chunk(sum(indexes.values()), chunks)
    out["total"] = per_chunk(sum(groups.values()), chunks)
    return out | {"tables": tables}


async def index_bytes(db: PgDatabase, user: str, tables: dict[str, Any]) -> dict[str, int]:
    out = {}
    for table in tables:
        row = await db.fetchone(INDEX_SQL, (partition_name(table, user),))
        out[table] = int(row["bytes"]) if row else 0
    return out


async def import_corpus(url: str, stream: CorpusStream) -> dict[str, Any]:
    """The corpus written as the bench user with the bm25 statistics; rate, sizes, server."""
    db = await open_pg(url)
    try:
        await migrate(db, COMPONENT, MIGRATIONS)
        started = time.perf_counter()
        loaded = await writes.load(db, USER, stream, True)
        loaded["generate_and_write_s"] = round(time.perf_counter() - started, 2)
        measured = await writes.sizes(db, USER, loaded["chunks"])
        tables = {name: entry for name, entry in measured.items() if "bytes" in entry}  # not the bm25 sum
        loaded["storage"] = storage(tables, await index_bytes(db, USER, tables), loaded["chunks"])
        row = await db.fetchone(VERSION_SQL) or {}
        loaded["server_version"] = row.get("v")
        loaded["postmaster_pid"] = cpu.parent_of(int(row["pid"])) if row.get("pid") else None
    finally:
        await db.close()
    return loaded


async def activity(url: str) -> dict[str, Any] | None:
    """`ACTIVITY_SQL` now (None: a server without `pg_stat_checkpointer`)."""
    db = await open_pg(url)
    try:
        return await db.fetchone(ACTIVITY_SQL)
    except psycopg.Error:
        return None
    finally:
        await db.close()


async def write_without_bm25(url: str, size: int, seed: int) -> dict[str, Any]:
    """The same corpus written again without the bm25 statistics, as a throw-away user."""
    db = await open_pg(url)
    user = f"bench-nobm25-{uuid.uuid4().hex[:8]}"
    try:
        return await writes.load(db, user, CorpusStream(size, seed), False)
    finally:
        await drop_user(db, user)
        await db.close()


def write_cost(with_bm25: dict[str, Any], without: dict[str, Any]) -> dict[str, Any]:
    keys = ("seconds", "items_per_s", "chunks_per_s")
    return {
        "with_bm25": {k: with_bm25[k] for k in keys},
        "without_bm25": {k: without[k] for k in keys},
        "cost_ratio": round(without["chunks_per_s"] / max(with_bm25["chunks_per_s"], 1e-9), 2),
    }


async def run_pg_bench(options: PgBenchOptions) -> dict[str, Any]:
    phases: dict[str, float] = {}
    report: dict[str, Any] = {"store": "postgresql", "size": options.size, "seed": options.seed}
    report["load_average_start"] = cpu.load_average()
    with (
        tempfile.TemporaryDirectory(prefix="knowledge-mcp-pgbench-") as tmp,
        scratch_database(options.database_url) as url,
    ):
        t0 = time.perf_counter()
        stream = CorpusStream(options.size, options.seed)
        imported = await import_corpus(url, stream)
        phases["import"] = round(time.perf_counter() - t0, 2)
        corpus, queries = stream.corpus, [q for _, q in stream.corpus.queries]
        before = await activity(url)
        t0 = time.perf_counter()
        report["tools"] = await tool_latency(Path(tmp), url, queries, options.mode)
        phases["tools"] = round(time.perf_counter() - t0, 2)
        report["server_activity"] = {"before_tools": before, "after_tools": await activity(url)}
        t0 = time.perf_counter()
        pg_pid = imported.pop("postmaster_pid")
        http = (
            await throughput(Path(tmp), url, queries, options.plan, pg_pid) if options.plan.workers else None
        )
        phases["http"] = round(time.perf_counter() - t0, 2)
        cost = None
        if options.write_cost:
            t0 = time.perf_counter()
            cost = write_cost(imported, await write_without_bm25(url, options.size, options.seed))
            phases["write_cost"] = round(time.perf_counter() - t0, 2)
    report["postgresql"] = imported.pop("server_version")
    report["fingerprint"] = corpus.fingerprint()
    report["sizes"] = {"items": imported["items"], "chunks": imported["chunks"], "queries": len(queries)}
    report["storage"] = imported.pop("storage")
    report["import"] = imported
    report |= {"http": http, "write_cost": cost, "phases_s": phases}
    report["load_average_end"] = cpu.load_average()
    return report
