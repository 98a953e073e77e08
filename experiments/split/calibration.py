"""Where the score calibration's numbers come from: the fits of `sources/search/scoring.py` and
`sources/search/dense/fusion.py`, and the floor's threshold, on a BEIR split (SciFact train).

    python -m experiments.split.calibration --beir DIR --data-dir D [--split train] [--json]

`D` is a data dir where `knowledge-mcp eval --retrieval hybrid --data-dir D` ran (its import and
vectors are reused). Every query goes through the notes source's hybrid pipeline (`signals`):

- lexical: a logistic regression of relevance on (evidence, coverage) over each query's top 20
  bm25 hits, against the former fit on evidence alone (log-loss, reliability tables);
- hybrid: the weights of the logit of the calibrated bm25 and of the cosine over every
  candidate; only their ratio orders the candidates, so the ratio is chosen on nDCG@10 over a
  grid around the log-loss fit, then scale and bias refit by log-loss at that ratio;
- floor: the best cosine of queries of random letters, against real queries' and the cosine of
  relevant and of random (query, document) pairs.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from knowledge_mcp.bench.dense.fusion_fit import fit_logistic, logit
from knowledge_mcp.bench.evaluation import K_NDCG, K_RECALL, embed_corpus, load_beir, mrr, ndcg, recall
from knowledge_mcp.bench.split import reliability
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.search import scoring
from knowledge_mcp.sources.search.dense import fusion
from knowledge_mcp.sources.storage.db import database_path, open_database

from .signals import QuerySignals, Signal, collect, nonsense_cosines, pair_cosines

TOP = 20
FORMER_FLOOR = 0.40
"""The absolute semantic floor before `sources/search/dense/evidence.py`, for comparison."""
RATIOS = tuple(round(0.070 + 0.0005 * n, 4) for n in range(41))
Scorer = Callable[[QuerySignals, Signal], float]


def features(q: QuerySignals, c: Signal) -> tuple[float, float]:
    """(evidence in SciFact's unit, coverage) of a candidate bm25 matched."""
    if c.bm25 is None or q.norm is None:
        return 0.0, 0.0
    evidence = -c.bm25 / math.sqrt(max(1, q.terms)) * scoring.REFERENCE_IDF / q.norm.unique
    return evidence, scoring.coverage(c.bm25, q.norm.mass)


def lexical_rows(queries: Sequence[QuerySignals]) -> np.ndarray:
    """(evidence, coverage, 1, relevant) of each query's top `TOP` bm25 hits."""
    rows = [
        (*features(q, c), 1.0, float(c.relevant))
        for q in queries
        for c in q.candidates
        if c.lexical_rank is not None and c.lexical_rank <= TOP
    ]
    return np.array(rows, dtype=np.float64).reshape(-1, 4)


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def fit_lexical(queries: Sequence[QuerySignals]) -> dict[str, Any]:
    table = lexical_rows(queries)
    x, y = table[:, :3], table[:, 3]
    w = fit_logistic(x, y)
    evidence_only = np.c_[x[:, 0], x[:, 2]]
    w0 = fit_logistic(evidence_only, y)
    p, p0 = 1 / (1 + np.exp(-(x @ w))), 1 / (1 + np.exp(-(evidence_only @ w0)))
    return {
        "hits": len(y),
        "relevant": int(y.sum()),
        "weights": [round(float(v), 4) for v in w],
        "log_loss": round(log_loss(p, y), 4),
        "evidence_only": {"weights": [round(float(v), 4) for v in w0], "log_loss": round(log_loss(p0, y), 4)},
        "coverage_median": {
            "all": round(float(np.median(x[:, 1])), 3),
            "relevant": round(float(np.median(x[y == 1, 1])), 3),
        },
    }


def lexical_score(q: QuerySignals, c: Signal) -> float:
    """The shipped calibrated bm25 of a candidate (that of no match when bm25 did not match it)."""
    return scoring.calibrated(c.bm25 if c.bm25 is not None else 0.0, q.terms, q.norm)


def former_score(q: QuerySignals, c: Signal) -> float:
    """The calibration before coverage (evidence alone, in the collection's own idf)."""
    return scoring.calibrated(c.bm25 if c.bm25 is not None else 0.0, q.terms)


def ranking_figures(queries: Sequence[QuerySignals], score: Scorer) -> dict[str, float]:
    """nDCG@10, Recall@100, MRR@10 of the candidates ordered by `score` (6 digits), ties by rowid."""
    ranked = [
        ([c.doc for c in sorted(q.candidates, key=lambda c: (-round(score(q, c), 6), c.rowid))][:K_RECALL], q)
        for q in queries
    ]
    return {
        "ndcg@10": round(statistics.fmean(ndcg(r, q.relevant, K_NDCG) for r, q in ranked), 4),
        "recall@100": round(statistics.fmean(recall(r, q.relevant, K_RECALL) for r, q in ranked), 4),
        "mrr@10": round(statistics.fmean(mrr(r, q.relevant, K_NDCG) for r, q in ranked), 4),
    }


def hybrid(weights: Sequence[float]) -> Scorer:
    lex, cos, bias = weights

    def score(q: QuerySignals, c: Signal) -> float:
        return 1 / (1 + math.exp(-(lex * logit(lexical_score(q, c)) + cos * c.cosine + bias)))

    return score


def fit_hybrid(queries: Sequence[QuerySignals]) -> dict[str, Any]:
    """Per ratio (lexical weight / cosine weight): scale and bias by log-loss, nDCG@10; the best."""
    pairs = [(logit(lexical_score(q, c)), c.cosine, float(c.relevant)) for q in queries for c in q.candidates]
    table = np.array(pairs, dtype=np.float64)
    free = fit_logistic(np.c_[table[:, :2], np.ones(len(table))], table[:, 2])
    grid = []
    for ratio in RATIOS:
        w = fit_logistic(np.c_[ratio * table[:, 0] + table[:, 1], np.ones(len(table))], table[:, 2])
        weights = (round(float(w[0]) * ratio, 4), round(float(w[0]), 4), round(float(w[1]), 4))
        grid.append({"ratio": ratio, "weights": list(weights), **ranking_figures(queries, hybrid(weights))})
    best = max(grid, key=lambda row: (row["ndcg@10"], row["recall@100"], row["mrr@10"]))
    return {
        "log_loss_fit": [round(float(v), 4) for v in free],
        "best": best,
        "shipped": {"weights": [fusion.LEXICAL_WEIGHT, fusion.COSINE_WEIGHT, fusion.BIAS]}
        | ranking_figures(queries, hybrid((fusion.LEXICAL_WEIGHT, fusion.COSINE_WEIGHT, fusion.BIAS))),
        "grid": grid,
    }


def quantiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    qs = np.quantile(np.array(values, dtype=np.float64), [0.01, 0.05, 0.5, 0.95, 0.99, 1.0])
    return {k: round(float(v), 3) for k, v in zip(("p1", "p5", "p50", "p95", "p99", "max"), qs, strict=True)}


def floor_figures(queries: Sequence[QuerySignals], nonsense: list[tuple[float, bool]]) -> dict[str, Any]:
    relevant, random_pairs = pair_cosines(queries)
    best = [q.best_cosine for q in queries]
    t = FORMER_FLOOR
    return {
        "threshold": t,
        "nonsense_best": quantiles([b for b, _ in nonsense])
        | {"matched_a_word": sum(m for _, m in nonsense)},
        "real_best": quantiles(best) | {"below": round(float(np.mean(np.array(best) < t)), 4)},
        "relevant_pairs": quantiles(relevant) | {"below": round(float(np.mean(np.array(relevant) < t)), 4)},
        "random_pairs": quantiles(random_pairs),
    }


def reliability_of(queries: Sequence[QuerySignals], score: Scorer, lexical_only: bool) -> dict[str, Any]:
    """The reliability table of each query's top 10 by `score`."""
    pairs = []
    for q in queries:
        pool = [c for c in q.candidates if c.lexical_rank is not None] if lexical_only else list(q.candidates)
        pairs += [(score(q, c), c.relevant) for c in sorted(pool, key=lambda c: -score(q, c))[:K_NDCG]]
    buckets = reliability.table(pairs)
    return {"error": round(reliability.expected_error(buckets), 4), "table": [b.row() for b in buckets]}


async def report(beir: Path, split: str, data_dir: Path, limit_queries: int | None = None) -> dict[str, Any]:
    _, queries, qrels, qids = load_beir(beir, split, limit_queries)
    db = await open_database(database_path(data_dir, "eval", "notes"), notes.migrations)
    try:
        await embed_corpus(db)
        await notes.memory_indexes(db).ready()
        found = await collect(db, queries, qrels, qids)
        nonsense = await nonsense_cosines(db)
    finally:
        await db.close()
    return {
        "dataset": beir.name,
        "split": split,
        "queries": len(found),
        "lexical": fit_lexical(found),
        "hybrid": fit_hybrid(found),
        "floor": floor_figures(found, nonsense),
        "reliability": {
            "lexical_former": reliability_of(found, former_score, True),
            "lexical": reliability_of(found, lexical_score, True),
            "hybrid": reliability_of(
                found, hybrid((fusion.LEXICAL_WEIGHT, fusion.COSINE_WEIGHT, fusion.BIAS)), False
            ),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.split.calibration")
    parser.add_argument("--beir", type=Path, required=True, help="a BEIR-layout dataset folder")
    parser.add_argument("--split", default="train", help="the qrels split to fit on (default train)")
    parser.add_argument("--data-dir", type=Path, required=True, help="where eval --retrieval hybrid ran")
    parser.add_argument("--limit-queries", type=int, help="only the first N queries")
    parser.add_argument("--json", action="store_true", help="print the whole report as one JSON object")
    args = parser.parse_args(argv)
    out = anyio.run(report, args.beir, args.split, args.data_dir, args.limit_queries)
    if not args.json:
        out["hybrid"].pop("grid")
        for name in ("lexical_former", "lexical", "hybrid"):
            out["reliability"][name]["table"] = [r for r in out["reliability"][name]["table"] if r["hits"]]
    print(json.dumps(out, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
