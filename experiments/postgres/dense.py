"""Semantic and hybrid search on the PostgreSQL item store against the SQLite files, on a BEIR
set: nDCG@10 of both stores' pages, how often their top ten agree, the latency of one page,
and the embedding speed into each store.

    python -m experiments.postgres.dense --beir ../shared/data/scifact \\
        --database-url postgresql://… --data-dir /tmp/scifact-eval [--limit-queries N]

The corpus is imported as notes into SQLite and embedded there (kept in `--data-dir`: a second
run embeds nothing), then copied with `migrate`'s copy (items and vectors) into PostgreSQL as a
throw-away user, whose partitions are dropped at the end. Each query runs through both stores'
search pipelines (`notes.search`, a page of ten). Embedding speed: the vectors of the first
`--embed-sample` chunks are computed again into each store (SQLite: a fresh database of those
documents; PostgreSQL: the same chunks' vectors deleted, then `embed_missing` into it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

from knowledge_mcp.bench.evaluation import K_NDCG, embed_corpus, import_corpus, load_beir, ndcg, spread
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.dense.embedder import embedder
from knowledge_mcp.sources.search.dense.indexing import embed_missing
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.search.request import SearchMode, SearchRequest
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.importing import item_id_for
from knowledge_mcp.sources.storage.postgres.copying import copy_source
from knowledge_mcp.sources.storage.postgres.embeddings.store import PgVectorStore
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, open_pg, redacted
from knowledge_mcp.sources.storage.postgres.schema import (
    COMPONENT,
    MIGRATIONS,
    as_user,
    drop_user,
    partition_name,
)
from knowledge_mcp.sources.storage.postgres.store import PgStore
from knowledge_mcp.sources.storage.store import Store
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore

FORGET_SQL = """DELETE FROM pg_chunk_vectors WHERE user_id = %s AND chunk IN (
    SELECT id FROM pg_chunks WHERE user_id = %s AND source = 'notes' ORDER BY id LIMIT %s)"""


async def _sqlite(where: Path, beir: Path, corpus: list[dict[str, Any]]) -> Database:
    db = await open_database(database_path(where, "eval", "notes"), notes.migrations)
    if (await db.fetchone("SELECT count(*) FROM notes_items"))[0] == 0:  # type: ignore[index]
        await import_corpus(db, beir, corpus)
    await embed_corpus(db)
    await notes.memory_indexes(db).ready()
    return db


async def _score(
    store: Store,
    mode: SearchMode,
    qids: list[str],
    queries: dict[str, str],
    qrels: Any,
    doc_of: dict[str, str],
) -> tuple[list[float], list[float], list[list[str]]]:
    ndcgs, latencies, tops = [], [], []
    for qid in qids:
        started = time.perf_counter()
        page = await notes.search(store, SearchRequest(queries[qid], limit=K_NDCG, mode=mode), Defaults())
        latencies.append((time.perf_counter() - started) * 1000)
        ranked = [doc_of[r.id] for r in page.results]
        ndcgs.append(ndcg(ranked, qrels[qid], K_NDCG))
        tops.append(ranked)
    return ndcgs, latencies, tops


async def _embedding_speed(
    pg: PgDatabase, user: str, beir: Path, corpus: list[dict[str, Any]], n: int
) -> dict[str, Any]:
    model = embedder()
    assert model is not None
    with tempfile.TemporaryDirectory(prefix="knowledge-mcp-dense-") as tmp:
        lite = await open_database(database_path(Path(tmp), "eval", "notes"), notes.migrations)
        try:
            await import_corpus(lite, beir, corpus[:n])
            started = time.perf_counter()
            lite_report = await embed_missing(SqliteVectorStore(lite, SOURCES["notes"]), model)
            lite_s = time.perf_counter() - started
        finally:
            await lite.close()
    async with pg.transaction() as conn:
        await as_user(conn, user)
        await conn.execute(FORGET_SQL, (user, user, lite_report.chunks))
    started = time.perf_counter()
    pg_report = await embed_missing(PgVectorStore(pg, user, "notes"), model)
    pg_s = time.perf_counter() - started
    return {
        "sqlite_chunks_per_s": round(lite_report.linked / lite_s, 1),
        "postgresql_chunks_per_s": round(pg_report.linked / pg_s, 1),
        "chunks": [lite_report.linked, pg_report.linked],
    }


async def compare(
    url: str, beir: Path, data_dir: Path, limit_queries: int | None, sample: int, split: str = "train"
) -> dict[str, Any]:
    corpus, queries, qrels, qids = load_beir(beir, split, limit_queries)
    doc_of = {item_id_for(f"{beir.name}#{doc['_id']}"): str(doc["_id"]) for doc in corpus}
    lite = await _sqlite(data_dir, beir, corpus)
    pg = await open_pg(url)
    user = f"dense-{uuid.uuid4().hex[:12]}"
    out: dict[str, Any] = {
        "dataset": beir.name,
        "split": split,
        "queries": len(qids),
        "database": redacted(url),
    }
    try:
        await migrate(pg, COMPONENT, MIGRATIONS)
        started = time.perf_counter()
        copied = await copy_source(lite, pg, notes, user)
        out["copy"] = {"s": round(time.perf_counter() - started, 1), "vectors": copied.vectors}
        for table in ("pg_items", "pg_chunks", "pg_posting_blocks", "pg_term_docs", "pg_chunk_vectors"):
            await pg.write(f"VACUUM (ANALYZE) {partition_name(table, user)}")
        items = PgStore(pg, user, "notes", database_path(data_dir, "eval", "notes"))
        for mode in ("semantic", "hybrid"):
            lite_ndcg, lite_ms, lite_top = await _score(
                SqliteStore(lite, "notes"), mode, qids, queries, qrels, doc_of
            )
            pg_ndcg, pg_ms, pg_top = await _score(items, mode, qids, queries, qrels, doc_of)
            out[mode] = {
                "ndcg@10": {
                    "sqlite": round(statistics.fmean(lite_ndcg), 4),
                    "postgresql": round(statistics.fmean(pg_ndcg), 4),
                },
                "same_top10": sum(a == b for a, b in zip(lite_top, pg_top, strict=True)),
                "latency_ms": {"sqlite": spread(lite_ms), "postgresql": spread(pg_ms)},
            }
        out["embedding"] = await _embedding_speed(pg, user, beir, corpus, sample)
    finally:
        await drop_user(pg, user)
        await pg.close()
        await lite.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beir", type=Path, required=True)
    parser.add_argument("--database-url", required=True)
    parser.add_argument(
        "--data-dir", type=Path, required=True, help="the SQLite corpus and its vectors, kept"
    )
    parser.add_argument("--split", default="train", help="the qrels split (train: the shared data's)")
    parser.add_argument("--limit-queries", type=int)
    parser.add_argument(
        "--embed-sample", type=int, default=300, help="documents embedded again into each store"
    )
    args = parser.parse_args()
    result = anyio.run(
        compare, args.database_url, args.beir, args.data_dir, args.limit_queries, args.embed_sample
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
