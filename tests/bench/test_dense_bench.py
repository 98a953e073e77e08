"""`knowledge-mcp bench --dense`: embedding speed, hybrid search over synthetic vectors, the dense
stage alone; run on a tiny size (no times asserted)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from knowledge_mcp.bench.dense.speed import bench_dense, dense_stage, passages
from knowledge_mcp.bench.dense.synthetic import unit_matrix
from knowledge_mcp.bench.report import print_dense
from knowledge_mcp.bench.run import BenchOptions, prepare
from knowledge_mcp.sources.registry import SOURCES
from tests.bench.test_bench import CLI
from tests.conftest import FIXTURES, ROOT


@pytest.mark.parametrize(("words", "limit"), [(200, 64), (50, 10), (1000, 3)])
def test_passages_are_real_note_text_cut_to_at_most_the_asked_words(words: int, limit: int) -> None:
    cut = passages(FIXTURES / "notes", words, limit)
    assert len(cut) == limit
    assert all(0 < len(p.split()) <= words for p in cut)
    first = sorted(p for p in (FIXTURES / "notes").rglob("*.md") if ".trash" not in p.parts)[0]
    assert " ".join(first.read_text(encoding="utf-8").split()).startswith(cut[0])


def test_synthetic_vectors_are_unit_rows_and_the_same_for_the_same_seed() -> None:
    matrix = unit_matrix(250_001, 8)
    assert matrix.dtype == np.float32 and matrix.shape == (250_001, 8)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(unit_matrix(10, 8), unit_matrix(10, 8))
    assert not np.array_equal(unit_matrix(10, 8), unit_matrix(10, 8, seed=2))


def test_the_dense_stage_reports_the_matrix_it_searched() -> None:
    report = dense_stage(2_000, dim=16, queries=3)
    assert report["vectors"] == 2_000 and report["queries"] == 3
    assert report["matrix_mb"] == round(2_000 * 16 * 4 / 2**20, 1)
    assert 0 < report["exact_ms"]["p50"] <= report["exact_ms"]["p95"]


@pytest.mark.anyio
async def test_the_dense_phases_embed_real_passages_and_search_every_source_hybrid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, _, _ = await prepare(BenchOptions(size=100, seed=3), tmp_path)
    report = await bench_dense(corpus, tmp_path, 2_000)
    embedding = report["embedding"]
    assert embedding["passages"] == 64 and embedding["windows"] >= 64
    assert embedding["passages_per_s"] > 0 and embedding["peak_rss_mb"] > 0
    searched = report["hybrid_search_ms"]["per_source"]
    assert set(searched) == set(SOURCES)
    for name, entry in searched.items():
        assert entry["vectors_given"] == entry["chunks"] == corpus.chunks(name), name
        assert entry["hybrid_answers"] > 0, name
    everywhere = report["knowledge_search_hybrid"]
    assert everywhere["mode"] == "hybrid" and everywhere["errors"] == 0
    assert everywhere["queries"] == len(corpus.queries)
    assert report["dense_stage"]["vectors"] == 2_000
    approximate = report["dense_stage"]["approximate"]
    assert approximate["vectors"] == 2_000 and 0.5 < approximate["recall@10"] <= 1.0
    print_dense(report)
    assert "passages/s" in capsys.readouterr().out


def test_too_few_dense_vectors_are_refused() -> None:
    done = subprocess.run(
        [CLI, "bench", "--dense", "--dense-vectors", "10"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 1 and "--dense-vectors" in done.stderr and "Traceback" not in done.stderr


def test_clustered_vectors_are_unit_rows_near_their_centres() -> None:
    from knowledge_mcp.bench.dense.ann import clustered

    matrix = clustered(3_000, 384)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    nearest = np.sort(matrix[:100] @ matrix.T, axis=1)[:, -2]  # the closest other vector
    assert float(np.median(nearest)) > 0.2  # uniform random 384-d vectors: about 0.15


def test_an_ann_library_is_compared_with_the_exact_top_ten() -> None:
    from knowledge_mcp.bench.dense.ann import compare

    library = "usearch"  # the dev install brings it (hnswlib, the other choice, needs a compiler)

    report = compare(3_000, library, dim=32, queries=10)
    assert report["library"] == library and report["vectors"] == 3_000
    assert 0.5 < report["recall@10"] <= 1.0
    assert report["exact_matrix_mb"] == round(3_000 * 32 * 4 / 2**20, 1)
