"""python -m experiments.split.calibration: the score fits and the floor, on a tiny BEIR set."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from experiments.split.calibration import main
from experiments.split.signals import nonsense_queries
from knowledge_mcp.bench.evaluation import evaluate
from tests.bench.test_split_eval import beir  # noqa: F401  (the fixture)


def test_nonsense_queries_are_random_letters_and_the_same_each_time() -> None:
    queries = nonsense_queries(20)
    assert queries == nonsense_queries(20) and len(set(queries)) == 20
    assert all(w.isalpha() and w.islower() and 5 <= len(w) <= 9 for q in queries for w in q.split())


@pytest.mark.anyio
async def test_the_calibration_report_fits_both_curves_and_measures_the_floor(
    beir: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data_dir = tmp_path / "data"
    await evaluate(beir, "train", retrieval="hybrid", data_dir=data_dir)
    capsys.readouterr()
    await anyio.to_thread.run_sync(main, ["--beir", str(beir), "--data-dir", str(data_dir), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["queries"] == 3
    assert report["lexical"]["relevant"] == 3 and len(report["lexical"]["weights"]) == 3
    assert report["hybrid"]["best"]["ndcg@10"] == 1.0
    assert report["floor"]["nonsense_best"]["matched_a_word"] == 0
    assert report["floor"]["nonsense_best"]["max"] < report["floor"]["real_best"]["max"]
    tables = report["reliability"]
    assert set(tables) == {"lexical_former", "lexical", "hybrid"}
    assert all(sum(row["hits"] for row in t["table"]) > 0 for t in tables.values())
