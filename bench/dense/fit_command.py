"""`eval --folds K`: the BEIR corpus imported and embedded (or reused from `--data-dir`), every
query's fusion candidates collected, and the fusion cross-validated (`fusion_fit`)."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import anyio

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.storage.db import database_path, open_database

from ..evaluation import embed_corpus, import_corpus, load_beir
from .candidates import collect
from .fusion_fit import SEED, cross_validate


async def fit_report(
    beir: Path, split: str, k: int, data_dir: Path | None = None, limit_queries: int | None = None
) -> dict[str, Any]:
    corpus, queries, qrels, qids = load_beir(beir, split, limit_queries)
    with tempfile.TemporaryDirectory(prefix="knowledge-mcp-fit-") as tmp:
        where = data_dir if data_dir is not None else Path(tmp)
        db = await open_database(database_path(where, "eval", "notes"), notes.migrations)
        try:
            row = await db.fetchone("SELECT count(*) FROM notes_items")
            if row is None or int(row[0]) < len(corpus):
                await import_corpus(db, beir, corpus)
            await embed_corpus(db)
            await notes.memory_indexes(db).ready()
            found = await collect(db, queries, qrels, qids)
        finally:
            await db.close()
    return {"dataset": beir.name, "split": split, **cross_validate(found, k, SEED)}


def _line(name: str, row: dict[str, Any]) -> str:
    metrics = f"nDCG@10 {row['ndcg@10']:.4f}  Recall@100 {row['recall@100']:.4f}  MRR@10 {row['mrr@10']:.4f}"
    return f"  {name:<28} {metrics}"


def print_report(report: dict[str, Any]) -> None:
    what = f"{report['queries']} queries, {report['folds']}-fold cross-validation"
    print(f"{report['dataset']} [{report['split']}] {what}")
    print(_line("bm25 alone", report["lexical"]))
    print(_line("shipped weights, in-sample", report["shipped_in_sample"]))
    print(_line("refit, out-of-fold mean", report["out_of_fold"]))
    print(_line("refit on all, in-sample", report["refit_all"]))
    for row in report["per_fold"]:
        lex, cos, bias = row["weights"]
        print(
            f"  fold {row['fold']} ({row['queries']} q): weights {lex:.4f} {cos:.4f} {bias:.4f}  "
            f"held-out nDCG@10 {row['held_out']['ndcg@10']:.4f} (shipped {row['shipped']['ndcg@10']:.4f}, "
            f"bm25 {row['lexical']['ndcg@10']:.4f})"
        )
    refit, shipped = report["refit_all"]["weights"], report["shipped_in_sample"]["weights"]
    print(f"  refit on all: weights {refit}; shipped {shipped}")


def run_fit_command(
    beir: Path,
    split: str,
    k: int,
    as_json: bool,
    limit_queries: int | None = None,
    data_dir: Path | None = None,
) -> int:
    report = anyio.run(fit_report, beir, split, k, data_dir, limit_queries)
    if as_json:
        print(json.dumps(report))
    else:
        print_report(report)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m knowledge_mcp.bench.dense.fit_command")
    parser.add_argument("--beir", type=Path, required=True, help="a BEIR-layout dataset folder")
    parser.add_argument("--split", default="train", help="the qrels split to fit and score (default train)")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds (default 5)")
    parser.add_argument("--data-dir", type=Path, help="keep (or reuse) the import and its vectors here")
    parser.add_argument("--limit-queries", type=int, help="only the first N queries")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    args = parser.parse_args(argv)
    return run_fit_command(args.beir, args.split, args.folds, args.json, args.limit_queries, args.data_dir)


if __name__ == "__main__":
    raise SystemExit(main())
