"""`knowledge-mcp bench`: a deterministic synthetic corpus and one JSON report (no times asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_mcp.bench.corpus import generate
from knowledge_mcp.bench.phases import fanout_ratio
from knowledge_mcp.bench.run import BenchOptions, prepare
from knowledge_mcp.sources.registry import SOURCES
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
def test_bench_json_reports_every_section_with_positive_numbers() -> None:
    command = [CLI, "bench", "--size", "300", "--json", "--load", "--clients", "1,3", "--load-seconds", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    for key in ("sizes", "setup", "sources", "aggregator", "get", "floor_ratio_p50", "peak_rss_mb", "e2e"):
        assert key in report, key
    assert report["fingerprint"] == generate(300, 1).fingerprint()
    assert report["sizes"]["chunks"] == generate(300, 1).chunks()
    assert set(report["sources"]) == set(SOURCES)
    for entry in report["sources"].values():
        assert entry["import"]["items"] > 0 and entry["import"]["chunks_per_s"] > 0
        assert entry["queries_with_hits"] > 0
        # A small source is copied into memory; only a large one keeps just its vocabulary.
        assert entry["memory_index"]["used"] and not entry["memory_index"]["vocabulary"]
        assert entry["search_ms"]["p50"] > 0 and entry["raw_fts_ms"]["p50"] > 0 and entry["ratio_p50"] > 0
    assert report["setup"]["cache"] == "off" and report["setup"]["import_chunks_per_s"] > 0
    aggregator = report["aggregator"]
    # Every query answered (none refused by the rate limiter), every kind timed.
    assert aggregator["errors"] == 0 and aggregator["queries"] == report["sizes"]["queries"]
    assert aggregator["latency_ms"]["p95"] > 0
    assert aggregator["warmup_ms"] > 0  # the first call and the background copies, timed apart
    # The server's own time per call (its request log) is part of the client's.
    assert 0 < aggregator["server_ms"]["p50"] <= aggregator["latency_ms"]["p50"]
    assert set(aggregator["by_kind_ms"]) == set(report["sizes"]["query_kinds"])
    # Each source's own tool timed beside it, and the fan-out ratio over the slowest of them.
    assert set(aggregator["source_tools_ms"]) == set(SOURCES)
    assert report["fanout_ratio"] == aggregator["fanout_ratio"]
    assert report["fanout_ratio"]["slowest_p50_source"] in SOURCES
    assert report["fanout_ratio"]["p50"] > 0 and report["fanout_ratio"]["p95"] > 0
    # Half the queries searched before the sources' own tools, half after, each order's ratio apart.
    assert set(aggregator["fanout_by_order"]) == {"search_first", "sources_first"}
    assert all(o["p50"] > 0 for o in aggregator["fanout_by_order"].values())
    assert set(report["get"]) == {"snippet", "chunk", "chunk_with_siblings", "full"}
    assert all(g["calls"] > 0 and g["p50"] > 0 for g in report["get"].values())
    assert report["peak_rss_mb"] > 0
    for e2e in (report["e2e"]["stdio"], report["http_e2e"]):
        assert e2e["queries"] > 0 and 0 < e2e["p50"] <= e2e["p95"] <= e2e["p99"]
    assert report["http_e2e"]["transport"] == "streamable-http"
    # The stdio figure stands beside its floor, an unknown tool's round trip in the same session.
    floor = report["e2e"]["stdio"]["floor_ms"]
    assert 0 < floor["p50"] <= floor["p95"] and report["e2e"]["stdio"]["ratio_to_floor_p50"] > 0
    load = report["load"]
    assert load["transport"] == "http" and load["user"] == "local"
    assert [level["clients"] for level in load["levels"]] == [1, 3]
    for level in load["levels"]:
        assert level["connected"] == level["clients"] and level["errors"] == 0, level
        assert level["calls"] > 0 and level["calls_per_s"] > 0 and level["latency_ms"]["p50"] > 0
    assert load["server_peak_rss_mb"] is None or load["server_peak_rss_mb"] > 0


def test_bench_table_without_load_says_so_and_bad_options_are_refused() -> None:
    bad = subprocess.run(
        [CLI, "bench", "--clients", "0,x"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert bad.returncode == 1 and "--clients" in bad.stderr and "Traceback" not in bad.stderr
    small = subprocess.run(
        [CLI, "bench", "--size", "10"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert small.returncode == 1 and "--size" in small.stderr


@pytest.mark.anyio
async def test_a_cached_corpus_is_reused_with_the_same_databases_and_queries(tmp_path: Path) -> None:
    options = BenchOptions(size=300, seed=4, cache_dir=tmp_path / "cache")
    first, again = tmp_path / "first", tmp_path / "again"
    corpus, imports, setup = await prepare(options, first)
    assert setup["cache"] == "miss"
    cached, cached_imports, cached_setup = await prepare(options, again)
    assert cached_setup["cache"] == "hit" and cached_setup["cache_key"] == setup["cache_key"]
    assert cached.fingerprint() == corpus.fingerprint() == generate(300, 4).fingerprint()
    assert cached.queries == corpus.queries and cached.chunk_counts == corpus.chunk_counts
    assert cached_imports == imports
    for name in SOURCES:
        assert (again / "users" / "local" / f"{name}.db").read_bytes() == (
            first / "users" / "local" / f"{name}.db"
        ).read_bytes()
    other, _, other_setup = await prepare(
        BenchOptions(size=300, seed=5, cache_dir=options.cache_dir), tmp_path / "o"
    )
    assert other_setup["cache"] == "miss" and other.fingerprint() != corpus.fingerprint()


def test_the_fanout_ratio_divides_by_the_slowest_source_of_each_percentile() -> None:
    searched = {"p50": 12.0, "p95": 30.0, "p99": 40.0}
    alone = {"notes": [4.0] * 18 + [20.0] * 2, "media": [6.0] * 20, "chats": []}
    ratio = fanout_ratio(searched, alone)
    # media is the slowest at p50 (6 ms), notes at p95 (20 ms); chats answered nothing and is left out.
    assert ratio["fanout_ratio"] == {"slowest_p50_source": "media", "p50": 2.0, "p95": 1.5}
    assert set(ratio["source_tools_ms"]) == {"notes", "media"}
