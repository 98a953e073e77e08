"""`knowledge_search` end to end over stdio against the protocol's own floor, on real queries.

    python -m knowledge_mcp.bench.stdio.calls --data-dir D [--user eval] [--beir DIR] [--json]
        [--queries N] [--modes lexical,hybrid] [--profile FILE]

A real `knowledge-mcp serve --transport stdio` subprocess (`bench.http.server_env`: quiet logs,
no background embedding) and the official SDK client, which validates every structured result
against the tool's output schema as a host's client would. For each query, interleaved so the
shared machine's noise falls on every figure alike: the floor (a call of a tool that does not
exist: the protocol round trip with no work), then `knowledge_search` at each page size
(`LIMITS`) and retrieval mode, `seen: show` so every call costs the same. Besides the latency
of each it reports the client's share: the output-schema validation timed again on the result it
received, and the size of what came over the pipe. `--profile FILE` runs the server under
cProfile, written to FILE when the server exits (dev only: `python -m pstats FILE`).

`--beir DIR` reads the queries of a BEIR dataset: `qrels/test.tsv`'s, or where the dataset has
no test file, the queries no `qrels/train.tsv` line judges (SciFact: its 300 test queries). The
data dir is one `eval --retrieval hybrid --data-dir D` filled (the corpus as the user's notes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, MCPError, StdioServerParameters
from mcp_types import CallToolResult

from .. import http as bench_http
from ..evaluation import percentile, read_jsonl, read_qrels

LIMITS = (10, 100)
FLOOR_TOOL = "no_such_tool"
"""A tool the server does not have: the call's round trip with no work (a tool error)."""


def stats(ms: list[float]) -> dict[str, float]:
    return {"calls": len(ms), **{f"p{p}": round(percentile(ms, p), 2) for p in (50, 95, 99)}}


def beir_test_queries(beir: Path) -> list[str]:
    """The dataset's test queries: `qrels/test.tsv`'s, else every query train does not judge."""
    queries = {q["_id"]: q["text"] for q in read_jsonl(beir / "queries.jsonl")}
    test = beir / "qrels" / "test.tsv"
    if test.exists():
        return [queries[q] for q in read_qrels(test) if q in queries]
    train = read_qrels(beir / "qrels" / "train.tsv")
    return [text for qid, text in queries.items() if qid not in train]


def server_params(data_dir: Path, user: str, profile: Path | None) -> StdioServerParameters:
    profiled = ["-m", "cProfile", "-o", str(profile)] if profile is not None else []
    args = ["-m", "knowledge_mcp", "serve", "--transport", "stdio", "--data-dir", str(data_dir)]
    args += ["--user", user]
    return StdioServerParameters(command=sys.executable, args=profiled + args, env=bench_http.server_env())


async def floor_call(client: Client) -> float:
    t0 = time.perf_counter()
    with suppress(MCPError):  # a server may answer an unknown tool with a protocol error
        await client.call_tool(FLOOR_TOOL, {})
    return (time.perf_counter() - t0) * 1000


class Phase:
    """One configuration's calls: latency, the client's schema validation, bytes, warnings."""

    def __init__(self, limit: int, mode: str) -> None:
        self.args: dict[str, Any] = {"limit": limit, "mode": mode, "seen": "show"}
        self.ms: list[float] = []
        self.validate_ms: list[float] = []
        self.structured_bytes: list[int] = []
        self.text_bytes: list[int] = []
        self.errors = 0
        self.score_types: set[str] = set()

    async def call(self, client: Client, query: str) -> None:
        t0 = time.perf_counter()
        result = await client.call_tool("knowledge_search", {"query": query, **self.args})
        ms = (time.perf_counter() - t0) * 1000
        if result.is_error:
            self.errors += 1
            return
        self.ms.append(ms)
        t0 = time.perf_counter()
        await client.session.validate_tool_result("knowledge_search", result)
        self.validate_ms.append((time.perf_counter() - t0) * 1000)
        self.note_size(result)

    def note_size(self, result: CallToolResult) -> None:
        structured = result.structured_content or {}
        self.structured_bytes.append(len(json.dumps(structured, ensure_ascii=False).encode()))
        self.text_bytes.append(sum(len(getattr(c, "text", "").encode()) for c in result.content))
        self.score_types.add(str(structured.get("score_type", "fts")))

    def report(self) -> dict[str, Any]:
        n = max(len(self.structured_bytes), 1)
        return {
            **self.args,
            "latency_ms": stats(self.ms),
            "client_validate_ms": stats(self.validate_ms),
            "structured_bytes_mean": round(sum(self.structured_bytes) / n),
            "text_bytes_mean": round(sum(self.text_bytes) / n),
            "score_types": sorted(self.score_types),
            "errors": self.errors,
        }


async def stdio_latency(
    params: StdioServerParameters,
    queries: Sequence[str],
    modes: Sequence[str],
    limits: Sequence[int] = LIMITS,
) -> dict[str, Any]:
    """Every query's floor and `knowledge_search` calls, interleaved, through one stdio session."""
    phases = [Phase(limit, mode) for mode in modes for limit in limits]
    floor: list[float] = []
    t0 = time.perf_counter()
    async with Client(params) as client:
        start_ms = (time.perf_counter() - t0) * 1000
        await client.list_tools()
        for phase in phases:  # warm: databases open, memory indexes and the model loaded
            await phase.call(client, queries[0])
            phase.ms.clear()
            phase.validate_ms.clear()
        for query in queries:
            floor.append(await floor_call(client))
            for phase in phases:
                await phase.call(client, query)
    floor_s = stats(floor)
    reports = [phase.report() for phase in phases]
    for r in reports:
        r["ratio_to_floor_p50"] = round(r["latency_ms"]["p50"] / max(floor_s["p50"], 1e-6), 2)
    return {"queries": len(queries), "start_ms": round(start_ms, 1), "floor_ms": floor_s, "search": reports}


def print_report(report: dict[str, Any]) -> None:
    f = report["floor_ms"]
    print(f"stdio, {report['queries']} queries; floor (unknown tool) p50 {f['p50']} ms, p95 {f['p95']} ms")
    for r in report["search"]:
        lat, val = r["latency_ms"], r["client_validate_ms"]
        print(
            f"knowledge_search top-{r['limit']} {r['mode']}: p50 {lat['p50']} ms, p95 {lat['p95']} ms "
            f"({r['ratio_to_floor_p50']}x floor); client validation p50 {val['p50']} ms; "
            f"{r['structured_bytes_mean']} B structured + {r['text_bytes_mean']} B text; "
            f"scores {','.join(r['score_types'])}; errors {r['errors']}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m knowledge_mcp.bench.stdio.calls")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--user", default="eval", help="whose notes to search (eval's data dirs: eval)")
    parser.add_argument("--beir", type=Path, default=Path("/work/shared/data/scifact"))
    parser.add_argument("--queries", type=int, default=None, help="the first N test queries (default: all)")
    parser.add_argument("--modes", default="lexical,hybrid", help="retrieval modes, comma-separated")
    parser.add_argument("--profile", type=Path, default=None, help="cProfile the server into this file")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    queries = beir_test_queries(args.beir)[: args.queries]
    params = server_params(args.data_dir, args.user, args.profile)
    report = anyio.run(stdio_latency, params, queries, args.modes.split(","))
    if args.json:
        print(json.dumps(report))
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
