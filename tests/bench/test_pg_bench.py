"""`knowledge-mcp bench --database-url`: the bench on the PostgreSQL item store (no times asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from knowledge_mcp.bench.corpus import generate
from knowledge_mcp.bench.postgres.command.full import group_of, storage
from knowledge_mcp.bench.postgres.command.options import worker_counts
from knowledge_mcp.bench.postgres.command.throughput import summary
from knowledge_mcp.bench.store_calls import WARMUP_QUERIES
from knowledge_mcp.bench.workers import cpu
from knowledge_mcp.bench.workers.load import no_results
from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.registry import SOURCE_NAMES
from tests.conftest import ROOT

CLI = str(Path(sys.executable).with_name("knowledge-mcp"))


@pytest.mark.parametrize(
    ("line", "state", "parent", "ticks"),
    [
        ("12 (python) S 1 12 12 0 -1 0 0 0 0 0 30 7 4 2 20 0 1 0", "S", "1", 43),
        ("99 (a (b) c) R 12 99 12 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0", "R", "12", 3),
        ("7 (postgres: bench) S 5 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0", "S", "5", 0),
    ],
)
def test_a_proc_stat_line_gives_state_parent_and_cpu_ticks_whatever_the_command_name(
    line: str, state: str, parent: str, ticks: int
) -> None:
    fields = cpu.stat_fields(line)
    assert (fields[0], fields[1], cpu.own_and_reaped_ticks(fields)) == (state, parent, ticks)


@pytest.mark.parametrize(
    ("line", "busy"),
    [
        ("cpu  100 5 50 1000 20 3 2 0 0 0", 160),
        ("cpu  0 0 0 500 0 0 0 0 0 0", 0),
        ("cpu  10 0 10 10", 20),
    ],
)
def test_the_machines_busy_ticks_leave_out_idle_and_iowait(line: str, busy: int) -> None:
    assert cpu.busy_ticks(line) == busy


def _fields(parent: int, ticks: int) -> list[str]:
    return ["S", str(parent), *["0"] * 9, str(ticks), "0", "0", "0"]


def test_a_process_trees_ticks_add_every_live_descendant_and_nothing_else() -> None:
    stats = {
        1: _fields(0, 5),
        10: _fields(1, 100),
        11: _fields(10, 20),
        12: _fields(11, 3),
        20: _fields(1, 50),
    }
    assert cpu.tree_ticks(10, stats) == 123
    assert cpu.tree_ticks(20, stats) == 50
    assert cpu.tree_ticks(404, stats) is None


def test_cpu_spent_between_snapshots_puts_the_rest_of_the_machine_under_others() -> None:
    before = cpu.Snapshot({"server": 100, "clients": 50, "postgresql": None}, 1000)
    after = cpu.Snapshot(
        {"server": 100 + cpu.TICKS, "clients": 50 + cpu.TICKS // 2, "postgresql": None}, 1000 + 3 * cpu.TICKS
    )
    spent = cpu.spent(before, after)
    assert spent["server"] == 1.0 and spent["clients"] == 0.5 and spent["postgresql"] is None
    assert spent["machine"] == 3.0 and spent["others"] == 1.5


def test_the_cpu_of_this_process_and_the_machine_is_read_from_proc() -> None:
    first = cpu.snapshot({"missing": None}, {"clients": os.getpid()})
    sum(i * i for i in range(300_000))  # some CPU of our own
    second = cpu.snapshot({"missing": None}, {"clients": os.getpid()})
    spent = cpu.spent(first, second)
    assert spent["missing"] is None
    assert spent["clients"] is not None and spent["clients"] >= 0
    assert cpu.load_average() is not None and len(cpu.load_average().split()) == 3  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "counts"),
    [("1,2", (1, 2)), ("2", (2,)), ("0", ()), ("1,2,4", (1, 2, 4))],
)
def test_worker_counts_are_read_from_a_comma_list_and_zero_means_no_http_phase(
    text: str, counts: tuple[int, ...]
) -> None:
    assert worker_counts(text) == counts


@pytest.mark.parametrize("text", ["", "a", "1,,2", "0,1", "17", "-1"])
def test_a_wrong_worker_list_is_one_sentence(text: str) -> None:
    with pytest.raises(KnowledgeError, match="--workers"):
        worker_counts(text)


@pytest.mark.parametrize(
    ("table", "group"),
    [
        ("pg_items", "items_and_chunks"),
        ("pg_chunks", "items_and_chunks"),
        ("pg_files", "items_and_chunks"),
        ("pg_postings", "postings"),
        ("pg_term_docs", "postings"),
        ("pg_chunk_vectors", "vectors"),
    ],
)
def test_each_table_counts_towards_its_part_of_the_store(table: str, group: str) -> None:
    assert group_of(table) == group


def test_storage_sums_the_parts_per_chunk_and_per_million_chunks() -> None:
    tables = {"pg_items": {"bytes": 1000}, "pg_chunks": {"bytes": 3000}, "pg_postings": {"bytes": 16000}}
    out = storage(tables, {"pg_items": 500, "pg_chunks": 500, "pg_postings": 9000}, 10)
    assert out["items_and_chunks"]["per_chunk"] == 400.0
    assert out["postings"]["per_1m_chunks_gb"] == 1.6
    assert out["indexes"]["bytes"] == 10_000
    assert out["total"]["bytes"] == 20_000 and out["tables"] == tables


def test_the_throughput_summary_averages_the_rounds_and_divides_two_workers_by_one() -> None:
    runs = [
        {"workers": 1, "levels": [{"clients": 8, "calls_per_s": 100.0}]},
        {"workers": 2, "levels": [{"clients": 8, "calls_per_s": 150.0}]},
        {"workers": 1, "levels": [{"clients": 8, "calls_per_s": 120.0}]},
        {"workers": 2, "levels": [{"clients": 8, "calls_per_s": 180.0}]},
    ]
    out = summary(runs)
    assert out["calls_per_s"] == {"1": {"8": [100.0, 120.0]}, "2": {"8": [150.0, 180.0]}}
    assert out["mean_calls_per_s"] == {"1": {"8": 110.0}, "2": {"8": 165.0}}
    assert out["ratio"] == {"2_over_1": {"8": 1.5}}


def databases(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute("SELECT datname FROM pg_database")}


@pytest.mark.slow
def test_bench_on_postgresql_reports_every_section_with_positive_numbers(pg_url: str) -> None:
    before = databases(pg_url)
    command = [CLI, "bench", "--database-url", pg_url, "--size", "60", "--json", "--clients", "1,2"]
    command += ["--load-seconds", "1", "--warmup-seconds", "0.5", "--rounds", "1"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWLEDGE_MCP_")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["store"] == "postgresql" and report["fingerprint"] == generate(60, 1).fingerprint()
    assert report["sizes"]["chunks"] == generate(60, 1).chunks() == report["import"]["chunks"]
    assert report["import"]["chunks_per_s"] > 0 and report["import"]["items_per_s"] > 0
    for part in ("items_and_chunks", "postings", "indexes", "total"):
        assert report["storage"][part]["bytes"] > 0 and report["storage"][part]["per_1m_chunks_gb"] > 0
    search = report["tools"]["search_ms"]
    assert set(search) == {f"{name}_search" for name in SOURCE_NAMES} | {"knowledge_search"}
    for figures in search.values():
        assert figures["errors"] == 0 and figures["queries"] == report["sizes"]["queries"]
        assert 0 < figures["p50"] <= figures["p95"]
        first = figures["first"]  # the first searches, before anything is built, timed apart
        assert first["calls"] == min(WARMUP_QUERIES, report["sizes"]["queries"]) and first["p50"] > 0
    assert search["knowledge_search"]["with_hits"] > 0
    activity = report["server_activity"]  # what the server did in the background while timed
    assert set(activity) == {"before_tools", "after_tools"}
    before_tools, after_tools = activity["before_tools"], activity["after_tools"]
    assert after_tools["checkpoints"] >= before_tools["checkpoints"] >= 0
    assert after_tools["autovacuums"] >= before_tools["autovacuums"] >= 0
    assert after_tools["autovacuum_workers"] >= 0 and isinstance(after_tools["autovacuumed"], list)
    assert all(g["calls"] > 0 and g["p50"] > 0 for g in report["tools"]["get_ms"].values())
    http = report["http"]
    assert [(run["round"], run["workers"]) for run in http["runs"]] == [(1, 1), (1, 2)]
    for run in http["runs"]:
        assert [level["clients"] for level in run["levels"]] == [1, 2]
        for level in run["levels"]:
            assert level["errors"] == 0 and level["calls"] > 0 and level["calls_per_s"] > 0
            assert level["empty"] < level["calls"]  # the clients search the corpus's user
            # the server's CPU is always seen; the clients' may round to 0 ticks in a short level
            assert level["cpu_s"]["server"] > 0 and level["cpu_s"]["clients"] >= 0
    assert http["summary"]["ratio"]["2_over_1"]["2"] > 0
    cost = report["write_cost"]
    assert cost["with_bm25"]["chunks_per_s"] > 0 and cost["without_bm25"]["chunks_per_s"] > 0
    assert databases(pg_url) == before  # the scratch database is gone


@pytest.mark.parametrize(
    ("answer", "empty"),
    [
        ('{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"results":[]}}}', True),
        ('{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"results":[{"uri":"notes://a"}]}}}', False),
        ('{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}', False),
        ("event: message", False),
    ],
)
def test_a_raw_load_answer_without_results_is_counted_as_empty(answer: str, empty: bool) -> None:
    assert no_results(answer) is empty
