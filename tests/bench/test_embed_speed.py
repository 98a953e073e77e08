"""`knowledge-mcp bench --embed-beir`: every setting timed on the same real windows, the background
ones paced as the worker paces itself, and the vectors compared."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from knowledge_mcp.bench.dense.embed_speed import PACED, embed_speed, paced_windows, run_embed_speed_command
from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.search import background
from knowledge_mcp.sources.search.dense.runtime import minilm

FIXTURE_NOTES = Path(__file__).parents[2] / "fixtures" / "notes"


def fixture_texts() -> list[str]:
    return [path.read_text(encoding="utf-8")[:900] for path in sorted(FIXTURE_NOTES.rglob("*.md"))]


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    with (tmp_path / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for n, text in enumerate(fixture_texts()[:4]):
            f.write(json.dumps({"_id": str(n), "title": f"Note {n}", "text": text}) + "\n")
    return tmp_path


def test_a_paced_run_gives_each_window_the_vector_of_one_call() -> None:
    model = minilm.MiniLMEmbedder.load(threads=1)
    texts = fixture_texts()
    assert len(texts) > background.BATCH  # more than one call of the worker's size
    paced = paced_windows(model, texts)
    whole = np.concatenate(model.embed_windows(texts))
    assert paced.shape == whole.shape
    assert float((paced * whole).sum(axis=1).min()) > 0.99999


def test_the_bench_times_every_setting_on_the_same_windows_at_equal_vectors(beir: Path) -> None:
    report = embed_speed(beir, windows=4, rounds=1)
    assert report["windows"] >= 4 and report["rounds"] == 1
    for name in ("foreground_old", "foreground_unfused", "foreground_new", *PACED):
        assert report[name]["windows_per_s"] > 0 and report[name]["windows_per_cpu_s"] > 0
    for label in ("foreground", "background", "background_one_thread", "fusion"):
        assert report[f"{label}_ratio"] > 0
        assert report[f"{label}_min_cosine"] > 0.99999
        assert report[f"{label}_mean_cosine"] >= report[f"{label}_min_cosine"]


def test_a_directory_without_a_corpus_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(KnowledgeError, match=r"corpus\.jsonl"):
        embed_speed(tmp_path, windows=4, rounds=1)


def test_a_window_count_out_of_range_is_refused_by_name(beir: Path) -> None:
    with pytest.raises(KnowledgeError, match="--embed-windows"):
        run_embed_speed_command(beir, 0)
