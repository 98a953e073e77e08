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
from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer

from ..evaluation import K_NDCG, K_RECALL, mrr, ndcg, percentile, read_jsonl, read_qrels, recall
from .corpus import DISTRACTORS, SHARES, write_split

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


async def run_queries(
    data_dir: Path,
    user: str,
    queries: list[tuple[str, str]],
    qrels: dict[str, dict[str, int]],
    doc_of: dict[str, str],
    **arguments: Any,
) -> dict[str, Any]:
    """Every query through knowledge_search; nDCG@10, Recall@100 (at `limit` 100), MRR@10, latency."""
    mcp, host = build_server(Settings(data_dir=data_dir, user=user, rate_limit_per_minute=0))
    scores: dict[str, list[float]] = {"ndcg": [], "recall": [], "mrr": []}
    latencies: list[float] = []
    try:
        async with Client(mcp, client_info=Implementation(name="eval", version="1")) as client:
            for qid, text in queries:
                started = time.perf_counter()
                result = await client.call_tool("knowledge_search", {"query": text, **arguments})
                latencies.append((time.perf_counter() - started) * 1000)
                out = result.structured_content or {}
                ranked = [doc_of.get(r["uri"], "") for r in out.get("results", [])]
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
    }


async def evaluate_split(
    beir: Path,
    split: str,
    limit_queries: int | None = None,
    session: int = 0,
    extra: dict[str, int] = DISTRACTORS,
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
        every = {"limit": K_RECALL, "seen": "show"}
        split_figures = await run_queries(data_dir, SPLIT_USER, queries, qrels, doc_of, **every)
        single_figures = await run_queries(data_dir, SINGLE_USER, queries, qrels, doc_of, **every)
        report: dict[str, Any] = {
            "dataset": beir.name,
            "split": split,
            "queries": len(queries),
            "sources": {name: {"documents": files.sizes[name], "share": SHARES[name]} for name in SHARES},
            "split_sources": split_figures,
            "single_index": single_figures,
            "merge_loss_ndcg@10": round(single_figures["ndcg@10"] - split_figures["ndcg@10"], 4),
        }
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
    beir: Path, split: str, as_json: bool, limit_queries: int | None, session: int
) -> int:
    report = anyio.run(evaluate_split, beir, split, limit_queries, session)
    if as_json:
        print(json.dumps(report))
        return 0
    print(f"{report['dataset']} [{report['split']}] {report['queries']} queries over five sources")
    sizes = ", ".join(f"{n} {v['documents']}" for n, v in report["sources"].items())
    print(f"  documents per source: {sizes}")
    for label, key in (("split across sources", "split_sources"), ("one index          ", "single_index")):
        f = report[key]
        print(
            f"  {label}  nDCG@10 {f['ndcg@10']:.4f}  Recall@100 {f['recall@100']:.4f}  "
            f"MRR@10 {f['mrr@10']:.4f}  p50 {f['latency_ms']['p50']} ms"
        )
    print(f"  merge loss (nDCG@10): {report['merge_loss_ndcg@10']:.4f}")
    if "session" in report:
        s = report["session"]
        print(
            f"  a session of {s['queries']} queries, nDCG@10: show {s['show']:.4f}  "
            f"downrank {s['downrank']:.4f}  hide {s['hide']:.4f}"
        )
    return 0
