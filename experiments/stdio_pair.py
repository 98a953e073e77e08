"""Two trees' stdio servers driven side by side, call by call, so a shared machine's load falls
on both alike.

    python -m experiments.stdio_pair --before-python P --before-data D --after-python Q
        --after-data E [--queries N] [--user eval]

One client loop holds two `knowledge-mcp serve --transport stdio` processes (each tree's own
virtual environment's Python, each over its own copy of a data dir that `eval --retrieval
hybrid` filled: a server migrates the copy's `sessions.db`) and makes every call of
`bench/stdio/calls.py` on both, alternating which goes first: the floor (a tool that does not
exist), then `knowledge_search` at top-10/top-100, lexical and hybrid, `seen: show`, through the
official client with its schema check. Prints JSON: each tree's floor and calls as that bench
reports them, and `paired`: the median of the after − before differences of each kind of call,
query by query.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from knowledge_mcp.bench import http as bench_http
from knowledge_mcp.bench.stdio.calls import LIMITS, Phase, beir_test_queries, floor_call, stats

MODES = ("lexical", "hybrid")


def params(python: str, data_dir: Path, user: str) -> StdioServerParameters:
    args = ["-m", "knowledge_mcp", "serve", "--transport", "stdio", "--data-dir", str(data_dir)]
    # Run outside any clone: `-m knowledge_mcp` finds the tree its Python has installed.
    return StdioServerParameters(
        command=python, args=[*args, "--user", user], env=bench_http.server_env(), cwd=str(data_dir)
    )


async def side_by_side(servers: dict[str, StdioServerParameters], queries: Sequence[str]) -> dict[str, Any]:
    """Each server's floor and phases, the calls of one query made on both before the next."""
    names = list(servers)
    phases = {name: [Phase(limit, mode) for mode in MODES for limit in LIMITS] for name in names}
    floor: dict[str, list[float]] = {name: [] for name in names}
    async with Client(servers[names[0]]) as first, Client(servers[names[1]]) as second:
        clients = dict(zip(names, (first, second), strict=True))
        for name, client in clients.items():  # warm: databases open, memory indexes and the model loaded
            await client.list_tools()
            for phase in phases[name]:
                await phase.call(client, queries[0])
                phase.ms.clear()
                phase.validate_ms.clear()
        for n, query in enumerate(queries):
            order = names if n % 2 == 0 else names[::-1]
            for name in order:
                floor[name].append(await floor_call(clients[name]))
            for k in range(len(phases[names[0]])):
                for name in order:
                    await phases[name][k].call(clients[name], query)
    report: dict[str, Any] = {"queries": len(queries)}
    for name in names:
        floor_s = stats(floor[name])
        calls = [phase.report() for phase in phases[name]]
        for r in calls:
            r["ratio_to_floor_p50"] = round(r["latency_ms"]["p50"] / max(floor_s["p50"], 1e-6), 2)
        report[name] = {"floor_ms": floor_s, "search": calls}
    report["paired"] = paired(floor, phases, names)
    return report


def paired(floor: dict[str, list[float]], phases: dict[str, list[Phase]], names: list[str]) -> dict[str, Any]:
    """The median over queries of the second server's ms less the first's, call by call (the
    two calls of one query ran back to back): steadier than the difference of two p50s."""

    def median_gap(first: list[float], second: list[float]) -> float | None:
        if len(first) != len(second) or not first:
            return None  # a call failed on one side: its pairs are lost
        return round(statistics.median(b - a for a, b in zip(first, second, strict=True)), 2)

    gaps: dict[str, Any] = {"floor_ms": median_gap(floor[names[0]], floor[names[1]])}
    for one, other in zip(phases[names[0]], phases[names[1]], strict=True):
        gaps[f"{one.args['mode']} top-{one.args['limit']}"] = median_gap(one.ms, other.ms)
    return gaps


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.stdio_pair")
    parser.add_argument("--before-python", required=True)
    parser.add_argument("--before-data", type=Path, required=True)
    parser.add_argument("--after-python", required=True)
    parser.add_argument("--after-data", type=Path, required=True)
    parser.add_argument("--user", default="eval")
    parser.add_argument("--beir", type=Path, default=Path("/work/shared/data/scifact"))
    parser.add_argument("--queries", type=int, default=None, help="the first N test queries (default: all)")
    args = parser.parse_args(argv)
    servers = {
        "before": params(args.before_python, args.before_data, args.user),
        "after": params(args.after_python, args.after_data, args.user),
    }
    queries = beir_test_queries(args.beir)[: args.queries]
    print(json.dumps(anyio.run(side_by_side, servers, queries)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
