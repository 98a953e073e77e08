"""What the rerank stage adds to a search: `python -m experiments.rerank.latency
--beir DIR --model model.onnx [--queries N] [--data-dir D] [--json]`.

Imports the BEIR corpus as notes (once, when `--data-dir` is kept), then runs the first N judged
queries of the split in-process, lexically, each without and with `rerank` by the cross-encoder
at `--model` (its `tokenizer.json` beside it): p50/p95 of both, of the difference per query, and
nDCG@10 of both (a random model's reranking is no better; a real one's should be).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from knowledge_mcp.bench.evaluation import import_corpus, load_beir, ndcg, spread
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.search.rerank.backend import Reranking
from knowledge_mcp.sources.search.rerank.cross_encoder import CrossEncoder
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.importing import item_id_for
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore


async def timed(db: Database, query: str, rerank: Reranking | None) -> tuple[float, list[str]]:
    request = SearchRequest(query, limit=10, mode="lexical")
    request.rerank = rerank
    started = time.perf_counter()
    response = await notes.search(SqliteStore(db, "notes"), request, Defaults())
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, [r.id for r in response.results]


async def measure(beir: Path, model: Path, split: str, count: int, data_dir: Path) -> dict[str, Any]:
    corpus, queries, qrels, ids = load_beir(beir, split, count)
    db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
    try:
        if await db.fetchone("SELECT 1 FROM notes_items LIMIT 1") is None:
            await import_corpus(db, beir, corpus)
        doc_of = {item_id_for(f"{beir.name}#{doc['_id']}"): str(doc["_id"]) for doc in corpus}
        rerank = Reranking(CrossEncoder.load(model), timeout_s=60.0)
        await timed(db, queries[ids[0]], rerank)  # warm: the memory index, the model's first run
        runs: dict[str, list[float]] = {"off": [], "on": [], "added": []}
        quality: dict[str, list[float]] = {"off": [], "on": []}
        for qid in ids:
            off, plain = await timed(db, queries[qid], None)
            on, reranked = await timed(db, queries[qid], rerank)
            for key, value in (("off", off), ("on", on), ("added", on - off)):
                runs[key].append(value)
            quality["off"].append(ndcg([doc_of[i] for i in plain], qrels[qid], 10))
            quality["on"].append(ndcg([doc_of[i] for i in reranked], qrels[qid], 10))
    finally:
        await db.close()
    return {
        "queries": len(ids),
        "model": model.name,
        "latency_ms": {k: spread(v, 1) for k, v in runs.items()},
        "ndcg@10": {k: round(statistics.fmean(v), 4) for k, v in quality.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beir", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True, help="a cross-encoder ONNX file")
    parser.add_argument("--split", default="train")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--data-dir", type=Path, help="keep the imported corpus here")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rerank-bench-"))
    report = anyio.run(measure, args.beir, args.model, args.split, args.queries, data_dir)
    print(json.dumps(report, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
