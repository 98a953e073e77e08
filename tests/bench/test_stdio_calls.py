"""The stdio bench's query set: a BEIR dataset's test queries, from its test judgements or,
where it ships only train's, every query train does not judge (SciFact's 300)."""

from __future__ import annotations

import json
from pathlib import Path

from knowledge_mcp.bench.stdio.calls import beir_test_queries


def _beir(root: Path, judged: dict[str, list[str]]) -> Path:
    (root / "qrels").mkdir(parents=True)
    queries = [{"_id": str(i), "text": f"query {i}"} for i in range(5)]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    for split, ids in judged.items():
        lines = ["query-id\tcorpus-id\tscore", *(f"{q}\tdoc\t1" for q in ids)]
        (root / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_without_a_test_file_the_queries_train_does_not_judge_are_the_test_set(tmp_path: Path) -> None:
    beir = _beir(tmp_path, {"train": ["0", "2", "3"]})
    assert beir_test_queries(beir) == ["query 1", "query 4"]


def test_a_test_file_names_the_test_queries(tmp_path: Path) -> None:
    beir = _beir(tmp_path, {"train": ["0"], "test": ["3", "1"]})
    assert beir_test_queries(beir) == ["query 3", "query 1"]
