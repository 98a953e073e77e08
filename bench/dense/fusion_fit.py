"""An honest figure for the hybrid fusion: k-fold cross-validation of its logistic fit by query.

`sources/search/dense/fusion.py` ranks the union of the lexical and dense pools by
sigmoid(LEXICAL_WEIGHT · logit(calibrated bm25) + COSINE_WEIGHT · cosine + BIAS), weights fitted
on the candidates' qrels. A figure measured on the queries the weights were fitted on says
little about new queries: here the queries are dealt into k folds, the fit is made on k − 1 of
them and nDCG@10 / Recall@100 / MRR@10 are scored on the held-out fold, for every fold.

    knowledge-mcp eval --beir DIR --split train --retrieval hybrid --folds 5 [--data-dir D]
    python -m knowledge_mcp.bench.dense.fit_command --beir DIR [--folds 5] [--data-dir D]

The candidates come from the project's own pipeline (`candidates.collect`); a data dir where
the eval already ran reuses its import and vectors (`--data-dir`).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from knowledge_mcp.sources.search.dense import fusion

from ..evaluation import K_NDCG, K_RECALL, mrr, ndcg, recall
from .candidates import Candidate, QueryCandidates

SEED = 15
Weights = tuple[float, float, float]
"""(lexical weight, cosine weight, bias), as in `fusion.py`."""
SHIPPED: Weights = (fusion.LEXICAL_WEIGHT, fusion.COSINE_WEIGHT, fusion.BIAS)


def folds(qids: Sequence[str], k: int, seed: int = SEED) -> list[list[str]]:
    """The queries dealt into `k` disjoint folds of near-equal size; the same for the same ids
    in any order (they are sorted, then shuffled by `seed`)."""
    if k < 2:
        raise ValueError("cross-validation needs at least 2 folds")
    order = sorted(set(qids))
    random.Random(seed).shuffle(order)
    return [sorted(order[i::k]) for i in range(k)]


def logit(p: float) -> float:
    p = min(max(p, 1e-9), 1.0 - 1e-9)
    return math.log(p / (1.0 - p))


def design(queries: Sequence[QueryCandidates]) -> tuple[np.ndarray, np.ndarray]:
    """Every candidate's features (logit of the calibrated bm25, cosine, 1) and its label."""
    rows = [
        (logit(c.lexical), c.cosine, 1.0, float(c.doc in q.relevant)) for q in queries for c in q.candidates
    ]
    table = np.array(rows, dtype=np.float64).reshape(-1, 4)
    return table[:, :3], table[:, 3]


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-6, steps: int = 100) -> np.ndarray:
    """Logistic regression by Newton's method (a tiny ridge keeps separable data finite)."""
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) + l2 * w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + l2 * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    return w


def fit(queries: Sequence[QueryCandidates]) -> Weights:
    w = fit_logistic(*design(queries))
    return (round(float(w[0]), 4), round(float(w[1]), 4), round(float(w[2]), 4))


Ranker = Callable[[Sequence[Candidate]], list[str]]


def by_weights(weights: Weights) -> Ranker:
    """Rank as `HybridFuser` does: the fused probability (6 digits), ties by item rowid."""
    lex, cos, bias = weights

    def rank(cands: Sequence[Candidate]) -> list[str]:
        def score(c: Candidate) -> float:
            return round(1.0 / (1.0 + math.exp(-(lex * logit(c.lexical) + cos * c.cosine + bias))), 6)

        return [c.doc for c in sorted(cands, key=lambda c: (-score(c), c.rowid))]

    return rank


def by_bm25(cands: Sequence[Candidate]) -> list[str]:
    """bm25's own order (the lexical pool alone)."""
    return [c.doc for c in sorted((c for c in cands if c.lexical_rank), key=lambda c: c.lexical_rank or 0)]


@dataclass(frozen=True)
class Scores:
    ndcg: float
    recall: float
    mrr: float

    def row(self) -> dict[str, float]:
        return {
            "ndcg@10": round(self.ndcg, 4),
            "recall@100": round(self.recall, 4),
            "mrr@10": round(self.mrr, 4),
        }


def score(queries: Sequence[QueryCandidates], rank: Ranker) -> Scores:
    ranked = [(rank(q.candidates)[:K_RECALL], q.relevant) for q in queries]
    return Scores(
        statistics.fmean(ndcg(r, rel, K_NDCG) for r, rel in ranked),
        statistics.fmean(recall(r, rel, K_RECALL) for r, rel in ranked),
        statistics.fmean(mrr(r, rel, K_NDCG) for r, rel in ranked),
    )


def mean(scores: Sequence[Scores]) -> Scores:
    return Scores(*(statistics.fmean(getattr(s, f) for s in scores) for f in ("ndcg", "recall", "mrr")))


def cross_validate(queries: Sequence[QueryCandidates], k: int, seed: int = SEED) -> dict[str, object]:
    """Per fold: the weights fitted without it and their held-out scores (with bm25's and the
    shipped weights' on the same fold); the out-of-fold means; and a refit on every query."""
    by_id = {q.qid: q for q in queries}
    rows: list[dict[str, object]] = []
    held: list[Scores] = []
    for i, fold in enumerate(folds(list(by_id), k, seed)):
        test = [by_id[q] for q in fold]
        train = [q for q in queries if q.qid not in set(fold)]
        weights = fit(train)
        held.append(score(test, by_weights(weights)))
        rows.append(
            {
                "fold": i,
                "queries": len(test),
                "weights": list(weights),
                "held_out": held[-1].row(),
                "shipped": score(test, by_weights(SHIPPED)).row(),
                "lexical": score(test, by_bm25).row(),
            }
        )
    refit = fit(queries)
    return {
        "queries": len(queries),
        "folds": k,
        "seed": seed,
        "per_fold": rows,
        "out_of_fold": mean(held).row(),
        "shipped_in_sample": {"weights": list(SHIPPED), **score(queries, by_weights(SHIPPED)).row()},
        "refit_all": {"weights": list(refit), **score(queries, by_weights(refit)).row()},
        "lexical": score(queries, by_bm25).row(),
        "weight_spread": _spread([r["weights"] for r in rows]),
    }


def _spread(weights: list[object]) -> dict[str, list[float]]:
    """Each weight's min and max over the folds."""
    table = np.array(weights, dtype=np.float64)
    names = ("lexical_weight", "cosine_weight", "bias")
    return {
        n: [round(float(table[:, i].min()), 4), round(float(table[:, i].max()), 4)]
        for i, n in enumerate(names)
    }
