"""The human-readable table of a `knowledge-mcp bench` report (`--json` prints the object itself)."""

from __future__ import annotations

from typing import Any


def print_table(r: dict[str, Any]) -> None:
    s, setup = r["sizes"], r["setup"]
    print(
        f"bench: {s['items']} items, {s['chunks']} chunks, {s['queries']} queries (seed {r['seed']}),"
        f" {s['disk_mb']} MB on disk, SQLite {r['sqlite']}"
    )
    print(
        f"setup: cache {setup['cache']}, generate+import {setup['generate_and_import_s']} s,"
        f" {setup['import_items_per_s']} items/s, {setup['import_chunks_per_s']} chunks/s"
    )
    print(
        f"{'source':<11} {'items/s':>9} {'chunks/s':>9} {'p50':>7} {'p95':>7} {'p99':>7}"
        f" {'raw p50':>8} {'ratio':>6}"
    )
    for name, e in r["sources"].items():
        ms, imp = e["search_ms"], e["import"]
        print(
            f"{name:<11} {imp['items_per_s']:>9} {imp['chunks_per_s']:>9} {ms['p50']:>7} {ms['p95']:>7}"
            f" {ms['p99']:>7} {e['raw_fts_ms']['p50']:>8} {e['ratio_p50']:>6}"
        )
    a = r["aggregator"]["latency_ms"]
    print(f"aggregator  knowledge_search p50 {a['p50']} ms  p95 {a['p95']} ms  p99 {a['p99']} ms")
    if "server_ms" in r["aggregator"]:
        s = r["aggregator"]["server_ms"]
        print(f"  server's own time p50 {s['p50']} ms  p95 {s['p95']} ms  p99 {s['p99']} ms")
    if "fanout_ratio" in r["aggregator"]:
        f = r["aggregator"]["fanout_ratio"]
        tools = "  ".join(f"{n} {t['p50']}/{t['p95']}" for n, t in r["aggregator"]["source_tools_ms"].items())
        print(
            f"  fan-out ratio p50 {f['p50']}  p95 {f['p95']} (slowest {f['slowest_p50_source']};"
            f" each source's tool p50/p95: {tools})"
        )
        for order, o in r["aggregator"].get("fanout_by_order", {}).items():
            print(f"  fan-out ratio, {order.replace('_', ' ')}: p50 {o['p50']}  p95 {o['p95']}")
    for kind, k in r["aggregator"].get("by_kind_ms", {}).items():
        print(f"  {kind:<8} p50 {k['p50']} ms  p95 {k['p95']} ms")
    for mode, g in r["get"].items():
        print(f"get {mode:<20} p50 {g['p50']} ms  p95 {g['p95']} ms  p99 {g['p99']} ms")
    for name, e in (("stdio", r["e2e"]["stdio"]), ("http", r["http_e2e"])):
        print(f"e2e {name:<7} {e['queries']} queries p50 {e['p50']} ms  p95 {e['p95']} ms  p99 {e['p99']} ms")
        if "floor_ms" in e:  # stdio: an unknown tool's round trip, in the same run
            print(f"  floor (unknown tool) p50 {e['floor_ms']['p50']} ms; {e['ratio_to_floor_p50']}x")
    if r["load"] is not None:
        load = r["load"]
        print(f"load over {load['transport']} (jwt, one user), {load['seconds_per_level']} s per level:")
        for level in r["load"]["levels"]:
            ms = level["latency_ms"]
            print(
                f"  {level['clients']:>4} clients  {level['calls_per_s']:>8} calls/s  p50 {ms['p50']} ms"
                f"  p95 {ms['p95']} ms  p99 {ms['p99']} ms"
                f"  errors {level['errors']}  partial {level.get('partial', 'n/a')}"
            )
        print(f"  server peak RSS {r['load']['server_peak_rss_mb']} MB")
    if r.get("dense") is not None:
        print_dense(r["dense"])
    print(f"peak RSS {r['peak_rss_mb']} MB (bench process); phases {r['phases_s']}")


def print_dense(d: dict[str, Any]) -> None:
    e = d["embedding"]
    print(
        f"embedding {e['passages']} real passages of ~{e['words_per_passage']} words"
        f" ({e['windows']} windows): {e['passages_per_s']} passages/s,"
        f" peak RSS {e['peak_rss_mb']} MB ({e['model']})"
    )
    h = d["hybrid_search_ms"]
    print(f"hybrid search, {h['queries']} queries, each embedded (synthetic chunk vectors):")
    for name, s in h["per_source"].items():
        print(
            f"  {name:<11} {s['chunks']:>8} chunks  p50 {s['p50']} ms  p95 {s['p95']} ms"
            f"  ({s['dense_index']})"
        )
    k = d["knowledge_search_hybrid"]
    ks, ms = k["server_ms"], k["latency_ms"]
    print(
        f"  knowledge_search (mode hybrid, {k['queries']} calls) p50 {ms['p50']} ms  p95 {ms['p95']} ms;"
        f" server's own p50 {ks['p50']} ms  p95 {ks['p95']} ms"
    )
    x = d["dense_stage"]
    print(
        f"dense stage alone at {x['vectors']} vectors ({x['matrix_mb']} MB):"
        f" exact p50 {x['exact_ms']['p50']} ms  p95 {x['exact_ms']['p95']} ms"
    )
    a = x["approximate"]
    print(
        f"  approximate ({a['library']} {a['dtype']}, built in {a['build_s']} s, {a['index_mb']} MB):"
        f" p50 {a['ann_ms']['p50']} ms  p95 {a['ann_ms']['p95']} ms, recall@10 {a['recall@10']}"
    )
