"""`knowledge-mcp eval`: retrieval quality on a BEIR-layout dataset (DESIGN §11).

The corpus is imported as notes into a throw-away data dir through the same import runner,
and every query of the split goes through the same search path the tools use.
"""

from __future__ import annotations

import json
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.dense.embedder import embedder, unavailable
from knowledge_mcp.sources.search.dense.indexing import embed_missing
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.search.request import SearchMode, SearchRequest
from knowledge_mcp.sources.search.scoring import INTERCEPT, SLOPE
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer, item_id_for
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from knowledge_mcp.sources.text import dates

K_NDCG = 10
K_RECALL = 100


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3 or parts[2] == "score":
                continue
            if int(parts[2]) > 0:
                qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return qrels


def load_beir(
    beir: Path, split: str, limit_queries: int | None = None
) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, dict[str, int]], list[str]]:
    """A BEIR dataset: its corpus, queries by id, the split's judgements, and the judged query
    ids to evaluate (the first `limit_queries`). A missing file is a clear error."""
    for name in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (beir / name).exists():
            raise KnowledgeError(
                f"--beir: {beir / name} is missing (BEIR layout: corpus.jsonl, queries.jsonl, qrels/)"
            )
    corpus = read_jsonl(beir / "corpus.jsonl")
    queries = {q["_id"]: q["text"] for q in read_jsonl(beir / "queries.jsonl")}
    qrels = read_qrels(beir / f"qrels/{split}.tsv")
    return corpus, queries, qrels, [q for q in qrels if q in queries][:limit_queries]


def ndcg(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def mrr(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    return next((1.0 / (i + 1) for i, d in enumerate(ranked[:k]) if d in relevant), 0.0)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))] if ordered else 0.0


def spread(values: list[float], digits: int = 2) -> dict[str, float]:
    """p50 and p95 of `values` (nearest rank), rounded to `digits`: how every bench reports a latency."""
    return {"p50": round(percentile(values, 50), digits), "p95": round(percentile(values, 95), digits)}


RETRIEVAL_MODES: dict[str, SearchMode] = {"lexical": "lexical", "dense": "semantic", "hybrid": "hybrid"}


async def embed_corpus(db: Any) -> float:
    """Give every chunk its vectors (only those missing: a kept data dir embeds once); seconds."""
    model = embedder()
    if model is None:
        raise KnowledgeError(f"--retrieval: {unavailable()}")
    started = time.perf_counter()
    await embed_missing(SqliteVectorStore(db, SOURCES["notes"]), model)
    return time.perf_counter() - started


async def import_corpus(db: Any, beir: Path, corpus: list[dict[str, Any]]) -> float:
    """Every document of `corpus` as a note of origin `<dataset>#<id>`; seconds."""
    importer = Importer(notes, db)
    origin = Path(beir.name)
    stamp = dates.now()
    started = time.perf_counter()
    for doc in corpus:
        item = ParsedItem(
            str(doc["_id"]), doc.get("title") or str(doc["_id"]), doc.get("text", ""), stamp, stamp
        )
        await importer.write_item(origin, item)
    import_s = time.perf_counter() - started
    # As after `knowledge-mcp import`, which closes the database: its pages are in the
    # database file, not only in the write-ahead log.
    await db.fetchall("PRAGMA wal_checkpoint(TRUNCATE)")
    return import_s


async def evaluate(
    beir: Path,
    split: str,
    limit_queries: int | None = None,
    retrieval: str = "lexical",
    data_dir: Path | None = None,
) -> dict[str, Any]:
    corpus, queries, qrels, qids = load_beir(beir, split, limit_queries)
    mode = RETRIEVAL_MODES[retrieval]
    with tempfile.TemporaryDirectory(prefix="knowledge-mcp-eval-") as tmp:
        where = data_dir if data_dir is not None else Path(tmp)
        db = await open_database(database_path(where, "eval", "notes"), notes.migrations)
        try:
            import_s = await import_corpus(db, beir, corpus)
            origin = Path(beir.name)
            embed_s = await embed_corpus(db) if mode != "lexical" else 0.0
            # Searches rank from the source's memory copy once it is built (`memory_index`).
            started = time.perf_counter()
            copied = await notes.memory_indexes(db).ready() is not None
            build_s = time.perf_counter() - started
            doc_of = {item_id_for(f"{origin}#{doc['_id']}"): str(doc["_id"]) for doc in corpus}
            defaults = Defaults()
            scores: dict[str, list[float]] = {"ndcg": [], "recall": [], "mrr": []}
            latencies: list[float] = []
            for qid in qids:
                t0 = time.perf_counter()
                response = await notes.search(
                    SqliteStore(db, "notes"), SearchRequest(queries[qid], limit=K_RECALL, mode=mode), defaults
                )
                latencies.append((time.perf_counter() - t0) * 1000)
                ranked = [doc_of[r.id] for r in response.results]
                scores["ndcg"].append(ndcg(ranked, qrels[qid], K_NDCG))
                scores["recall"].append(recall(ranked, qrels[qid], K_RECALL))
                scores["mrr"].append(mrr(ranked, qrels[qid], K_NDCG))
            # The latency an assistant sees: one page of 10 results, snippets included.
            # A page plans its search for its own depth, so its ranking is scored too.
            page_latencies: list[float] = []
            page_ndcg: list[float] = []
            parse_query.cache_clear()  # each page parses its query, as a first search would
            for qid in qids:
                t0 = time.perf_counter()
                page = await notes.search(
                    SqliteStore(db, "notes"), SearchRequest(queries[qid], limit=K_NDCG, mode=mode), defaults
                )
                page_latencies.append((time.perf_counter() - t0) * 1000)
                page_ndcg.append(ndcg([doc_of[r.id] for r in page.results], qrels[qid], K_NDCG))
            # The ranking step alone (query to the best items' rowids and scores), the part an
            # in-memory BM25 library does; only with the memory copy.
            rank_latencies: list[float] = []
            parse_query.cache_clear()
            for qid in qids if copied else []:
                t0 = time.perf_counter()
                await notes.rank_in_memory(db, queries[qid], K_NDCG)
                rank_latencies.append((time.perf_counter() - t0) * 1000)
        finally:
            await db.close()
    return {
        "dataset": beir.name,
        "split": split,
        "retrieval": retrieval,
        "queries": len(qids),
        "ndcg@10": round(statistics.fmean(scores["ndcg"]), 4) if qids else 0.0,
        "recall@100": round(statistics.fmean(scores["recall"]), 4) if qids else 0.0,
        "mrr@10": round(statistics.fmean(scores["mrr"]), 4) if qids else 0.0,
        "latency_ms": spread(latencies),
        "page_ndcg@10": round(statistics.fmean(page_ndcg), 4) if qids else 0.0,
        "page_latency_ms": {
            "limit": K_NDCG,
            **spread(page_latencies),
        },
        "memory_index": {
            "used": copied,
            "build_s": round(build_s, 2),
            "rank_latency_ms": {
                "limit": K_NDCG,
                **spread(rank_latencies, 3),
            },
        },
        "import": {
            "documents": len(corpus),
            "seconds": round(import_s, 2),
            "docs_per_s": round(len(corpus) / import_s, 1),
            "embed_s": round(embed_s, 1),
        },
        "config": {
            "source": "notes",
            "weights": list(notes.weights),
            "tokenizer": "porter unicode61 remove_diacritics 2",
            "calibration": {"slope": SLOPE, "intercept": INTERCEPT},
            "limit": K_RECALL,
        },
    }


def run_eval_command(
    beir: Path,
    split: str,
    as_json: bool,
    limit_queries: int | None,
    retrieval: str = "lexical",
    data_dir: Path | None = None,
) -> int:
    report = anyio.run(evaluate, beir, split, limit_queries, retrieval, data_dir)
    if as_json:
        print(json.dumps(report))
    else:
        print(f"{report['dataset']} [{report['split']}] {report['queries']} queries, {retrieval} retrieval")
        print(
            f"  nDCG@10 {report['ndcg@10']:.4f}   Recall@100 {report['recall@100']:.4f}"
            f"   MRR@10 {report['mrr@10']:.4f}"
        )
        latency = report["latency_ms"]
        print(f"  latency p50 {latency['p50']} ms   p95 {latency['p95']} ms (limit {K_RECALL})")
        page = report["page_latency_ms"]
        print(
            f"  latency p50 {page['p50']} ms   p95 {page['p95']} ms (limit {page['limit']}; "
            f"nDCG@10 of that page {report['page_ndcg@10']:.4f})"
        )
        copy = report["memory_index"]
        if copy["used"]:
            rank = copy["rank_latency_ms"]
            print(
                f"  ranked from the in-memory copy of the index (built in {copy['build_s']} s); "
                f"ranking alone p50 {rank['p50']} ms  p95 {rank['p95']} ms"
            )
        imp = report["import"]
        print(f"  import {imp['documents']} docs in {imp['seconds']} s ({imp['docs_per_s']} docs/s)")
    return 0
