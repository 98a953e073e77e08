"""`knowledge-mcp eval --beir DIR --database-url postgresql://…`: the PostgreSQL store's BM25.

The corpus is imported as notes of a throw-away user (their partitions are dropped at the end)
through the PostgreSQL writer, and every query of the split is ranked by the store's exact BM25
(`storage/postgres/bm25.py`): the ranking step, as `rank_in_memory` is on SQLite. Snippets,
filters and paging through PostgreSQL are not wired into the search pipeline yet.
"""

from __future__ import annotations

import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.postgres import bm25
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, check_url, open_pg, redacted
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS, drop_user, partition_name
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter
from knowledge_mcp.sources.text import dates

from ..evaluation import K_NDCG, K_RECALL, load_beir, mrr, ndcg, recall, spread

BATCH = 250
"""Documents written per transaction."""
IDS_SQL = "SELECT id, origin FROM pg_items WHERE user_id = %s AND source = 'notes'"
SIZE_SQL = "SELECT pg_total_relation_size(%s::regclass) AS bytes"


async def import_corpus(db: PgDatabase, user: str, beir: Path, corpus: list[dict[str, Any]]) -> float:
    """Every document as a note of origin `<dataset>#<id>`, BATCH a transaction; seconds."""
    writer = PgItemWriter(db, notes, user)
    origin = Path(beir.name)
    stamp = dates.now()
    items = [
        (origin, ParsedItem(str(d["_id"]), d.get("title") or str(d["_id"]), d.get("text", ""), stamp, stamp))
        for d in corpus
    ]
    started = time.perf_counter()
    for at in range(0, len(items), BATCH):
        await writer.write_items(items[at : at + BATCH])
    seconds = time.perf_counter() - started
    for table in ("pg_items", "pg_chunks", "pg_posting_blocks", "pg_term_docs"):
        # VACUUM sets the visibility map: the postings btree then answers without the heap
        await db.write(f"VACUUM (ANALYZE) {partition_name(table, user)}")
    return seconds


async def evaluate_pg(url: str, beir: Path, split: str, limit_queries: int | None = None) -> dict[str, Any]:
    corpus, queries, qrels, qids = load_beir(beir, split, limit_queries)
    db = await open_pg(url)
    user = f"eval-{uuid.uuid4().hex[:12]}"
    try:
        await migrate(db, COMPONENT, MIGRATIONS)
        import_s = await import_corpus(db, user, beir, corpus)
        sizes = {
            t: await _size(db, partition_name(t, user))
            for t in ("pg_items", "pg_chunks", "pg_posting_blocks")
        }
        doc_of = await _doc_ids(db, user)
        scores: dict[str, list[float]] = {"ndcg": [], "recall": [], "mrr": []}
        latencies, page_latencies = await _rank_all(db, user, queries, qids, qrels, doc_of, scores)
    finally:
        await drop_user(db, user)
        await db.close()
    return {
        "dataset": beir.name,
        "split": split,
        "retrieval": "lexical",
        "backend": "postgresql",
        "queries": len(qids),
        "ndcg@10": round(statistics.fmean(scores["ndcg"]), 4) if qids else 0.0,
        "recall@100": round(statistics.fmean(scores["recall"]), 4) if qids else 0.0,
        "mrr@10": round(statistics.fmean(scores["mrr"]), 4) if qids else 0.0,
        "latency_ms": spread(latencies),
        "page_latency_ms": {
            "limit": K_NDCG,
            **spread(page_latencies),
        },
        "import": {
            "documents": len(corpus),
            "seconds": round(import_s, 2),
            "docs_per_s": round(len(corpus) / import_s, 1) if import_s else 0.0,
            "bytes": sizes,
        },
        "config": {"source": "notes", "weights": list(notes.weights), "limit": K_RECALL},
    }


async def _rank_all(
    db: PgDatabase,
    user: str,
    queries: dict[str, str],
    qids: list[str],
    qrels: dict[str, dict[str, int]],
    doc_of: dict[int, str],
    scores: dict[str, list[float]],
) -> tuple[list[float], list[float]]:
    """Rank every query (the best K_RECALL, scored) and again a page of K_NDCG (timed only)."""
    latencies: list[float] = []
    for qid in qids:
        t0 = time.perf_counter()
        ranking = await bm25.rank(db, "notes", user, parse_query(queries[qid]), K_RECALL, notes.weights)
        latencies.append((time.perf_counter() - t0) * 1000)
        ranked = [doc_of[i] for i in ranking.ranked.item_rowids.tolist()] if ranking else []
        scores["ndcg"].append(ndcg(ranked, qrels[qid], K_NDCG))
        scores["recall"].append(recall(ranked, qrels[qid], K_RECALL))
        scores["mrr"].append(mrr(ranked, qrels[qid], K_NDCG))
    page_latencies: list[float] = []
    for qid in qids:
        t0 = time.perf_counter()
        await bm25.rank(db, "notes", user, parse_query(queries[qid]), K_NDCG, notes.weights)
        page_latencies.append((time.perf_counter() - t0) * 1000)
    return latencies, page_latencies


async def _doc_ids(db: PgDatabase, user: str) -> dict[int, str]:
    async with db.transaction() as conn:
        await conn.execute("SELECT set_config('knowledge.user_id', %s, true)", (user,))
        rows = await (await conn.execute(IDS_SQL, (user,))).fetchall()
    return {int(rowid): str(origin).split("#", 1)[1] for rowid, origin in rows}


async def _size(db: PgDatabase, table: str) -> int:
    row = await db.fetchone(SIZE_SQL, (table,))
    return int(row["bytes"]) if row else 0


def run_pg_eval_command(url: str, beir: Path, split: str, as_json: bool, limit_queries: int | None) -> int:
    report = anyio.run(evaluate_pg, check_url(url), beir, split, limit_queries)
    if as_json:
        print(json.dumps(report))
        return 0
    print(
        f"{report['dataset']} [{report['split']}] {report['queries']} queries, "
        f"PostgreSQL bm25 ({redacted(url)})"
    )
    print(
        f"  nDCG@10 {report['ndcg@10']:.4f}   Recall@100 {report['recall@100']:.4f}"
        f"   MRR@10 {report['mrr@10']:.4f}"
    )
    latency, page = report["latency_ms"], report["page_latency_ms"]
    print(f"  ranking p50 {latency['p50']} ms   p95 {latency['p95']} ms (limit {K_RECALL})")
    print(f"  ranking p50 {page['p50']} ms   p95 {page['p95']} ms (limit {page['limit']})")
    imp = report["import"]
    print(f"  import {imp['documents']} docs in {imp['seconds']} s ({imp['docs_per_s']} docs/s)")
    return 0
