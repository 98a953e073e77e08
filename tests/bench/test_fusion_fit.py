"""eval --folds: the hybrid fusion refitted on k − 1 folds of the queries, scored on the held-out one."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from knowledge_mcp.bench.dense.candidates import Candidate, QueryCandidates
from knowledge_mcp.bench.dense.fusion_fit import by_bm25, by_weights, cross_validate, fit, folds
from knowledge_mcp.sources.search.dense import fusion
from tests.test_cli import QUERIES, cli, write_beir


@pytest.mark.parametrize(
    ("qids", "k"),
    [
        ([str(n) for n in range(10)], 2),
        ([str(n) for n in range(10)], 3),
        ([str(n) for n in range(809)], 5),
        (["a", "b", "c"], 3),
        (["x", "y"], 5),
    ],
)
def test_folds_are_disjoint_cover_every_query_once_and_differ_in_size_by_at_most_one(
    qids: list[str], k: int
) -> None:
    dealt = folds(qids, k)
    assert len(dealt) == k
    flat = [q for fold in dealt for q in fold]
    assert sorted(flat) == sorted(qids)
    assert len(flat) == len(set(flat))
    sizes = [len(fold) for fold in dealt]
    assert max(sizes) - min(sizes) <= 1


def test_the_folds_depend_on_the_ids_and_the_seed_not_on_their_order() -> None:
    qids = [f"q{n}" for n in range(50)]
    assert folds(qids, 5) == folds(list(reversed(qids)), 5)
    assert folds(qids, 5) != folds(qids, 5, seed=16)


def test_fewer_than_two_folds_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2 folds"):
        folds(["a", "b"], 1)


def synthetic(
    weights: tuple[float, float, float], queries: int, per_query: int, seed: int
) -> list[QueryCandidates]:
    """Candidates whose relevance is drawn from the logistic model with `weights`."""
    rng = random.Random(seed)
    lex_w, cos_w, bias = weights
    out = []
    for q in range(queries):
        cands, relevant = [], {}
        for n in range(per_query):
            lexical, cosine = rng.uniform(0.0005, 0.95), rng.uniform(0.0, 0.9)
            z = lex_w * math.log(lexical / (1 - lexical)) + cos_w * cosine + bias
            doc = f"{q}-{n}"
            if rng.random() < 1 / (1 + math.exp(-z)):
                relevant[doc] = 1
            cands.append(Candidate(doc, n, lexical, cosine, n + 1))
        out.append(QueryCandidates(str(q), relevant, tuple(cands)))
    return out


@pytest.mark.parametrize("weights", [(0.7, 8.7, -5.5), (1.2, 3.0, -1.0), (0.3, 12.0, -8.0)])
def test_the_fit_recovers_the_weights_the_labels_were_drawn_from(weights: tuple[float, float, float]) -> None:
    lex, cos, bias = fit(synthetic(weights, queries=400, per_query=100, seed=7))
    assert lex == pytest.approx(weights[0], abs=0.08)
    assert cos == pytest.approx(weights[1], rel=0.08)
    assert bias == pytest.approx(weights[2], rel=0.08, abs=0.15)


def test_ranking_by_weights_puts_the_higher_fused_score_first_and_breaks_ties_by_rowid() -> None:
    cands = [
        Candidate("weak", 1, 0.01, 0.1, 1),
        Candidate("strong", 2, 0.9, 0.8, 2),
        Candidate("twin", 0, 0.01, 0.1),
    ]
    assert by_weights((0.7, 8.7, -5.5))(cands) == ["strong", "twin", "weak"]
    assert by_bm25(cands) == ["weak", "strong"]


def test_cross_validation_reports_each_fold_s_weights_and_held_out_scores() -> None:
    queries = synthetic((0.7, 8.7, -5.5), queries=60, per_query=50, seed=3)
    report = cross_validate(queries, 3)
    assert [row["queries"] for row in report["per_fold"]] == [20, 20, 20]  # type: ignore[index]
    for row in report["per_fold"]:  # type: ignore[attr-defined]
        assert len(row["weights"]) == 3
        assert 0 <= row["held_out"]["ndcg@10"] <= 1
    assert set(report["weight_spread"]) == {"lexical_weight", "cosine_weight", "bias"}  # type: ignore[arg-type]
    assert report["refit_all"]["ndcg@10"] > report["lexical"]["ndcg@10"]  # type: ignore[index]


def test_eval_folds_cross_validates_the_fusion_on_candidates_from_the_real_pipeline(tmp_path: Path) -> None:
    beir = write_beir(tmp_path / "tiny-beir")
    done = cli("eval", "--beir", str(beir), "--retrieval", "hybrid", "--folds", "3", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["queries"] == len(QUERIES) and report["folds"] == 3
    assert sorted(row["queries"] for row in report["per_fold"]) == [1, 1, 1]
    # Ten documents: every one is a candidate of every query, so each relevant one is found.
    assert report["shipped_in_sample"]["recall@100"] == 1
    assert report["shipped_in_sample"]["weights"] == [
        fusion.LEXICAL_WEIGHT,
        fusion.COSINE_WEIGHT,
        fusion.BIAS,
    ]
    assert report["lexical"]["mrr@10"] > 0.5


def test_eval_folds_refuses_a_lexical_run() -> None:
    done = cli("eval", "--beir", "nowhere", "--folds", "5")
    assert done.returncode != 0
    assert "--folds" in done.stderr and "Traceback" not in done.stderr
