"""`knowledge-mcp bench`: a deterministic synthetic corpus and one JSON report (no times asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from server.bench_corpus import generate
from sources.registry import SOURCES
from tests.conftest import ROOT

CLI = str(Path(sys.executable).with_name("knowledge-mcp"))


def test_the_same_seed_generates_the_same_corpus_and_another_seed_does_not() -> None:
    first, again, other = generate(300, 1), generate(300, 1), generate(300, 2)
    assert first.fingerprint() == again.fingerprint()
    assert first.fingerprint() != other.fingerprint()


def test_the_corpus_covers_every_source_with_about_the_asked_chunks() -> None:
    corpus = generate(1000, 7)
    assert {b.source for b in corpus.items} == set(SOURCES)
    assert 1000 <= corpus.chunks() <= 1300
    kinds = {kind for kind, _ in corpus.queries}
    assert kinds == {"common", "rare", "mix", "phrase", "prefix"}
    assert any(q.startswith('"') for _, q in corpus.queries) and any(
        q.endswith("*") for _, q in corpus.queries
    )


def test_chats_characters_and_prompts_carry_explicit_chunks_inside_their_content() -> None:
    for b in generate(300, 3).items:
        if b.source in ("chats", "characters", "prompts"):
            assert b.item.chunks
            assert all(0 <= c.start < c.end <= len(b.item.content) for c in b.item.chunks)


@pytest.mark.slow
def test_bench_json_reports_every_source_with_positive_numbers() -> None:
    done = subprocess.run(
        [CLI, "bench", "--size", "300", "--json"], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    for key in ("sizes", "sources", "aggregator", "get", "floor_ratio_p50", "peak_rss_mb", "e2e"):
        assert key in report, key
    assert report["fingerprint"] == generate(300, 1).fingerprint()
    assert set(report["sources"]) == set(SOURCES)
    for entry in report["sources"].values():
        assert entry["import"]["items"] > 0 and entry["import"]["chunks_per_s"] > 0
        assert entry["search_ms"]["p50"] > 0 and entry["raw_fts_ms"]["p50"] > 0 and entry["ratio_p50"] > 0
    assert report["aggregator"]["latency_ms"]["p95"] > 0
    assert set(report["get"]) == {"snippet", "chunk", "chunk_with_siblings", "full"}
    assert all(g["calls"] > 0 and g["p50"] > 0 for g in report["get"].values())
    assert report["peak_rss_mb"] > 0
    assert report["e2e"]["stdio"]["p50"] > 0 and report["e2e"]["http"] is None
