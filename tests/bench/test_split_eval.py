"""eval --split-sources: the corpus dealt out to the five sources by topic, in their own formats."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from knowledge_mcp.bench.evaluation import evaluate
from knowledge_mcp.bench.split.corpus import SHARES, dominant_terms, source_for
from knowledge_mcp.bench.split.evaluation import evaluate_split

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
]


def test_topics_are_dealt_to_the_sources_in_very_unequal_shares() -> None:
    dealt = Counter(source_for(f"term{n}") for n in range(20_000))
    for name, share in SHARES.items():
        assert dealt[name] / 20_000 == pytest.approx(share, abs=0.01)


@pytest.mark.parametrize(
    ("docs", "expected"),
    [
        ([{"_id": "1", "text": "kinase kinase cells"}, {"_id": "2", "text": "cells growth"}], "kinase"),
        ([{"_id": "1", "title": "Zebrafish", "text": "cells"}, {"_id": "2", "text": "cells"}], "zebrafish"),
        ([{"_id": "1", "text": "the of and"}, {"_id": "2", "text": "cells"}], ""),
    ],
)
def test_a_document_s_topic_is_its_highest_tf_idf_word(docs: list[dict[str, str]], expected: str) -> None:
    assert dominant_terms(docs)["1"] == expected


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    """Sixty documents, each with a word of its own; three queries that name one each."""
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    docs = [
        {
            "_id": str(n),
            "title": f"Report {WORDS[n % 14]}",
            "text": f"uniq{n}word {WORDS[n % 14]} {WORDS[n % 5]}",
        }
        for n in range(60)
    ]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [{"_id": f"q{n}", "text": f"uniq{n}word {WORDS[n % 14]}"} for n in (3, 17, 42)]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "train.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{n}\t{n}\t1\n" for n in (3, 17, 42))
    )
    return root


@pytest.mark.anyio
async def test_the_split_is_searched_through_knowledge_search_and_compared_with_one_index(beir: Path) -> None:
    report = await evaluate_split(beir, "train", session=3, extra={"notes": 10, "media": 4})
    assert report["queries"] == 3
    assert sum(s["documents"] for s in report["sources"].values()) == 60
    assert report["split_sources"]["ndcg@10"] == report["single_index"]["ndcg@10"] == 1.0
    assert report["merge_loss_ndcg@10"] == 0.0
    assert report["session"]["show"] == 1.0 and set(report["session"]) == {
        "queries",
        "show",
        "downrank",
        "hide",
    }


@pytest.mark.anyio
async def test_the_hybrid_split_borrows_the_eval_s_vectors_and_reports_the_scores_reliability(
    beir: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    await evaluate(beir, "train", retrieval="hybrid", data_dir=cache)  # embeds the 60 documents
    report = await evaluate_split(
        beir, "train", extra={"notes": 3, "media": 2}, retrieval="hybrid", cache=cache
    )
    assert report["retrieval"] == "hybrid"
    assert set(report["vectors_percent"]) == {"single", *report["sources"]}
    assert all(p == 100 for p in report["vectors_percent"].values())
    assert report["split_sources"]["ndcg@10"] == report["single_index"]["ndcg@10"] == 1.0
    buckets = report["split_sources"]["reliability"]
    assert sum(b["hits"] for b in buckets) > 3
    top = [b for b in buckets if b["hits"] and b["relevant"]]
    assert top and float(top[-1]["bucket"].split("-")[0]) >= 0.5, "the right documents score high"
