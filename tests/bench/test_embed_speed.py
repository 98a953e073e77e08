"""`knowledge-mcp bench --embed-beir`: every setting timed on the same real windows, the background
ones paced as the worker paces itself, and the vectors compared."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from knowledge_mcp.bench.dense.embed_speed import WORKERS, embed_speed, run_embed_speed_command
from knowledge_mcp.bench.dense.worker_pace import (
    OLD_PACING,
    OLD_TEXTS,
    Requests,
    paced_windows,
    worker_pacing,
)
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
    assert len(texts) > OLD_TEXTS  # more than one call of the old worker's size
    whole = np.concatenate(model.embed_windows(texts))
    busy = Requests(served=time.monotonic() + 3600)  # a request "now" for the whole run
    for pacing, batch in ((OLD_PACING, OLD_TEXTS), (worker_pacing(busy), background.BATCH)):
        paced = paced_windows(model, texts, pacing, batch)
        assert paced.shape == whole.shape
        assert float((paced * whole).sum(axis=1).min()) > 0.99999


def test_the_bench_worker_embeds_idle_at_full_size_and_paced_while_searches_come() -> None:
    requests = Requests()
    pacing = worker_pacing(requests)
    assert pacing.step(background.BATCH) == (background.IDLE_BATCH, 0.0)
    requests.served = time.monotonic()
    assert pacing.step(background.BATCH) == (background.BATCH, background.PAUSE_S)
    assert OLD_PACING.step(OLD_TEXTS) == (OLD_TEXTS, 0.05)  # the worker before: always paced


def test_the_bench_times_every_setting_on_the_same_windows_at_equal_vectors(beir: Path) -> None:
    report = embed_speed(beir, windows=4, rounds=1)
    assert report["windows"] >= 4 and report["rounds"] == 1
    for name in ("foreground_old", "foreground_unfused", "foreground_new", *WORKERS):
        assert report[name]["windows_per_s"] > 0 and report[name]["windows_per_cpu_s"] > 0
    assert report["query_ms"]["alone"]["n"] > 0 and report["query_ms"]["alone"]["p50"] > 0
    for label in ("foreground", "background", "background_busy", "background_pacing", "fusion"):
        assert report[f"{label}_ratio"] > 0
        assert report[f"{label}_min_cosine"] > 0.99999
        assert report[f"{label}_mean_cosine"] >= report[f"{label}_min_cosine"]


def test_a_directory_without_a_corpus_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(KnowledgeError, match=r"corpus\.jsonl"):
        embed_speed(tmp_path, windows=4, rounds=1)


def test_a_window_count_out_of_range_is_refused_by_name(beir: Path) -> None:
    with pytest.raises(KnowledgeError, match="--embed-windows"):
        run_embed_speed_command(beir, 0)
