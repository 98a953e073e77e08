"""The table `knowledge-mcp bench --database-url` prints (`--json` prints the report itself)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio

from .full import PgBenchOptions, run_pg_bench


def run_pg_bench_command(options: PgBenchOptions, as_json: bool, out: Callable[[str], None] = print) -> int:
    report = anyio.run(run_pg_bench, options)
    if as_json:
        out(json.dumps(report))
    else:
        for line in table(report):
            out(line)
    return 0


def table(r: dict[str, Any]) -> list[str]:
    s, imp = r["sizes"], r["import"]
    lines = [
        f"bench on PostgreSQL {r['postgresql']}: {s['items']} items, {s['chunks']} chunks,"
        f" {s['queries']} queries (seed {r['seed']}); load average {r['load_average_start']}",
        f"import (bm25 kept current): {imp['seconds']} s writing, {imp['items_per_s']} items/s,"
        f" {imp['chunks_per_s']} chunks/s",
    ]
    for part, e in r["storage"].items():
        if part != "tables":
            lines.append(
                f"  {part:<17} {e['bytes'] / 2**20:>9.1f} MB  {e['per_chunk']:>9} B/chunk"
                f"  {e['per_1m_chunks_gb']:>7} GB per 1M chunks"
            )
    t = r["tools"]
    lines.append(f"tools in process (mode {t['mode']}), p50 / p95 ms:")
    for tool, e in t["search_ms"].items():
        lines.append(
            f"  {tool:<20} {e['p50']:>8} {e['p95']:>8}  ({e['with_hits']}/{e['queries']} with hits,"
            f" {e['errors']} errors, {e['degraded']} degraded)"
        )
    for mode, e in t["get_ms"].items():
        lines.append(f"  get {mode:<16} {e['p50']:>8} {e['p95']:>8}  ({e['calls']} calls)")
    if r["http"] is not None:
        lines += http_lines(r["http"])
    if r["write_cost"] is not None:
        w = r["write_cost"]
        lines.append(
            f"write cost of bm25 statistics: {w['with_bm25']['chunks_per_s']} chunks/s with,"
            f" {w['without_bm25']['chunks_per_s']} without ({w['cost_ratio']}x)"
        )
    lines.append(f"phases {r['phases_s']}; load average at the end {r['load_average_end']}")
    return lines


def http_lines(h: dict[str, Any]) -> list[str]:
    lines = [f"HTTP ({h['client']} clients, {h['seconds_per_level']} s per level):"]
    for run in h["runs"]:
        for lv in run["levels"]:
            ms, c = lv["latency_ms"], lv["cpu_s"]
            lines.append(
                f"  round {run['round']} workers {run['workers']} clients {lv['clients']:>3}:"
                f" {lv['calls_per_s']:>8} calls/s  p50 {ms['p50']} ms  p95 {ms['p95']} ms"
                f"  errors {lv['errors']}  cpu s server {c.get('server')} clients {c.get('clients')}"
                f" postgresql {c.get('postgresql')} others {c.get('others')}  load {lv['load_average']}"
            )
    ratio = h["summary"].get("ratio")
    if ratio:
        lines.append(f"  mean calls/s {h['summary']['mean_calls_per_s']}; ratio {ratio}")
    return lines
