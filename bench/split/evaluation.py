"""`knowledge-mcp eval --split-sources`: does `knowledge_search` merge the sources as well as
one index would rank everything?

The BEIR corpus is split across the five sources by topic (`split/corpus.py`), imported through
the import runner as the files people have, and every query of the split goes through the
real server's `knowledge_search` (an in-memory MCP client). The same documents and
distractors imported as one folder of notes are the single index it is compared with; the
merge loss is the difference in nDCG@10. `--session N` also runs the first N queries as one
session with `seen = show`, `downrank` and `hide`, scoring each query's first page.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp_types import Implementation

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer

from ..evaluation import (
    K_NDCG,
    K_RECALL,
    RETRIEVAL_MODES,
    mrr,
    ndcg,
    percentile,
    read_jsonl,
    read_qrels,
    recall,
)
from . import reliability
from .corpus import DISTRACTORS, SHARES, write_split
from .vectors import borrow, embed_rest, lender, model_id

SPLIT_USER, SINGLE_USER = "split", "single"


async def import_folder(data_dir: Path, user: str, source: str, folder: Path) -> dict[str, str]:
    """Import `folder` into `user`'s `source`; each item's uri → the document id it holds."""
    src = get_source(source)
    db = await open_database(database_path(data_dir, user, source), src.migrations)
    try:
        summary = await Importer(src, db).run([folder])
        if summary.files_failed:
            raise RuntimeError(f"{source}: {summary.files_failed} files failed to import")
        rows = await db.fetchall(f"SELECT item_id, origin FROM {source}_items")
    finally:
        await db.close()
    uris: dict[str, str] = {}
    for item_id, origin in rows:
        key = str(origin).rsplit("#", 1)[1] if "#" in str(origin) else Path(str(origin)).stem
        if key.startswith("d"):  # distractors (x…) are relevant to nothing
            uris[f"{source}://{item_id}"] = key[1:]
    return uris


async def lend_vectors(data_dir: Path, cache: Path | None, sources: list[str]) -> dict[str, int]:
    """Vectors for every chunk of the single index and the split (`vectors.py`): SciFact's from
    the eval data dir `cache`, the distractors embedded once in the single index. The percentage
    of each source's chunks with vectors."""
    if cache is None:
        raise KnowledgeError(
            "--split-sources --retrieval hybrid: give --data-dir, where eval embedded the corpus"
        )
    mid = model_id()
    db = await _open(cache, "eval", "notes")
    try:
        lent = await lender(db, "notes")
    finally:
        await db.close()
    db = await _open(data_dir, SINGLE_USER, "notes")
    try:
        await borrow(db, "notes", lent, mid)
        covered = {"single": await embed_rest(db, "notes")}
        lent = await lender(db, "notes")
    finally:
        await db.close()
    for name in sources:
        db = await _open(data_dir, SPLIT_USER, name)
        try:
            await borrow(db, name, lent, mid)
            covered[name] = await embed_rest(db, name)
        finally:
            await db.close()
    return covered


async def _open(data_dir: Path, user: str, source: str) -> Database:
    return await open_database(database_path(data_dir, user, source), get_source(source).migrations)


async def run_queries(
    data_dir: Path,
    user: str,
    queries: list[tuple[str, str]],
    qrels: dict[str, dict[str, int]],
    doc_of: dict[str, str],
    **arguments: Any,
) -> dict[str, Any]:
    """Every query through knowledge_search; nDCG@10, Recall@100 (at `limit` 100), MRR@10, latency."""
    settings = Settings(data_dir=data_dir, user=user, rate_limit_per_minute=0, embed_in_background=False)
    mcp, host = build_server(settings)
    scores: dict[str, list[float]] = {"ndcg": [], "recall": [], "mrr": []}
    latencies: list[float] = []
    judged: list[tuple[float, bool]] = []
    try:
        async with Client(mcp, client_info=Implementation(name="eval", version="1")) as client:
            for qid, text in queries:
                started = time.perf_counter()
                result = await client.call_tool("knowledge_search", {"query": text, **arguments})
                latencies.append((time.perf_counter() - started) * 1000)
                out = result.structured_content or {}
                ranked = [doc_of.get(r["uri"], "") for r in out.get("results", [])]
                judged += [
                    (r["score"], d in qrels[qid]) for r, d in zip(out.get("results", []), ranked, strict=True)
                ]
                scores["ndcg"].append(ndcg(ranked, qrels[qid], K_NDCG))
                scores["recall"].append(recall(ranked, qrels[qid], K_RECALL))
                scores["mrr"].append(mrr(ranked, qrels[qid], K_NDCG))
    finally:
        await host.pool.close()
    return {
        "ndcg@10": round(statistics.fmean(scores["ndcg"]), 4),
        "recall@100": round(statistics.fmean(scores["recall"]), 4),
        "mrr@10": round(statistics.fmean(scores["mrr"]), 4),
        "latency_ms": {p: round(percentile(latencies, int(p[1:])), 2) for p in ("p50", "p95")},
        "reliability": [b.row() for b in reliability.table(judged)],
        "calibration_error": round(reliability.expected_error(reliability.table(judged)), 4),
    }


async def evaluate_split(
    beir: Path,
    split: str,
    limit_queries: int | None = None,
    session: int = 0,
    extra: dict[str, int] = DISTRACTORS,
    retrieval: str = "lexical",
    cache: Path | None = None,
) -> dict[str, Any]:
    corpus = read_jsonl(beir / "corpus.jsonl")
    texts = {q["_id"]: q["text"] for q in read_jsonl(beir / "queries.jsonl")}
    qrels = read_qrels(beir / f"qrels/{split}.tsv")
    queries = [(q, texts[q]) for q in qrels if q in texts][:limit_queries]
    with tempfile.TemporaryDirectory(prefix="knowledge-mcp-split-") as tmp:
        root = Path(tmp)
        files = write_split(corpus, root, extra=extra)
        data_dir = root / "data"
        doc_of: dict[str, str] = {}
        for name, folder in files.folders.items():
            doc_of.update(await import_folder(data_dir, SPLIT_USER, name, folder))
        doc_of.update(await import_folder(data_dir, SINGLE_USER, "notes", files.single))
        covered = await lend_vectors(data_dir, cache, list(files.folders)) if retrieval != "lexical" else {}
        every = {"limit": K_RECALL, "seen": "show", "mode": RETRIEVAL_MODES[retrieval]}
        split_figures = await run_queries(data_dir, SPLIT_USER, queries, qrels, doc_of, **every)
        single_figures = await run_queries(data_dir, SINGLE_USER, queries, qrels, doc_of, **every)
        report: dict[str, Any] = {
            "dataset": beir.name,
            "split": split,
            "retrieval": retrieval,
            "queries": len(queries),
            "sources": {name: {"documents": files.sizes[name], "share": SHARES[name]} for name in SHARES},
            "split_sources": split_figures,
            "single_index": single_figures,
            "merge_loss_ndcg@10": round(single_figures["ndcg@10"] - split_figures["ndcg@10"], 4),
        }
        if covered:
            report["vectors_percent"] = covered
        if session:
            report["session"] = await session_figures(data_dir, queries[:session], qrels, doc_of)
    return report


async def session_figures(
    data_dir: Path, queries: list[tuple[str, str]], qrels: dict[str, dict[str, int]], doc_of: dict[str, str]
) -> dict[str, Any]:
    """The queries as one research session (default limit, first page scored) per `seen` mode."""
    figures: dict[str, Any] = {"queries": len(queries)}
    for mode in ("show", "downrank", "hide"):
        run = await run_queries(
            data_dir, SPLIT_USER, queries, qrels, doc_of, seen=mode, session_id=f"eval-{mode}"
        )
        figures[mode] = run["ndcg@10"]
    return figures


def run_split_eval_command(
    beir: Path,
    split: str,
    as_json: bool,
    limit_queries: int | None,
    session: int,
    retrieval: str = "lexical",
    cache: Path | None = None,
) -> int:
    report = anyio.run(evaluate_split, beir, split, limit_queries, session, DISTRACTORS, retrieval, cache)
    if as_json:
        print(json.dumps(report))
        return 0
    what = f"{report['queries']} queries over five sources, {report['retrieval']} retrieval"
    print(f"{report['dataset']} [{report['split']}] {what}")
    sizes = ", ".join(f"{n} {v['documents']}" for n, v in report["sources"].items())
    print(f"  documents per source: {sizes}")
    for label, key in (("split across sources", "split_sources"), ("one index          ", "single_index")):
        f = report[key]
        print(
            f"  {label}  nDCG@10 {f['ndcg@10']:.4f}  Recall@100 {f['recall@100']:.4f}  "
            f"MRR@10 {f['mrr@10']:.4f}  p50 {f['latency_ms']['p50']} ms"
        )
    print(f"  merge loss (nDCG@10): {report['merge_loss_ndcg@10']:.4f}")
    f = report["split_sources"]
    print(f"  reliability of knowledge_search's scores (calibration error {f['calibration_error']:.4f}):")
    for line in reliability.render([reliability.Bucket(**_bucket(r)) for r in f["reliability"]]):
        print(line)
    if "session" in report:
        s = report["session"]
        print(
            f"  a session of {s['queries']} queries, nDCG@10: show {s['show']:.4f}  "
            f"downrank {s['downrank']:.4f}  hide {s['hide']:.4f}"
        )
    return 0


def _bucket(row: dict[str, Any]) -> dict[str, Any]:
    lower, upper = (float(x) for x in str(row["bucket"]).split("-"))
    hits = int(row["hits"])
    relevant = round((row["relevant"] or 0.0) * hits)
    return {
        "lower": lower,
        "upper": upper,
        "hits": hits,
        "relevant": relevant,
        "mean_score": row["mean_score"],
    }
