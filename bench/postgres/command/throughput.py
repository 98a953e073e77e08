"""HTTP throughput on the PostgreSQL item store with 1, 2, … workers (`bench --database-url`).

`serve --transport http --workers N` with `item_store = "postgresql"` on a free loopback port,
warmed up (`warmup_s` of unmeasured load: each worker fills its caches on its first calls), then
loaded at each client count by authenticated MCP clients (`http.load`: the SDK's streamable
HTTP client, `knowledge_search` back to back, every client its own JWT for the bench user; or
with `raw`, plain stateless POSTs, `workers.load.raw_load`, which cost the client far less CPU).
The worker counts run in turn and the whole sequence `rounds` times (1,2,1,2), so a change in
the machine's load falls on both. Each level also records the CPU seconds spent by the server
(all its workers), the load clients (this process), PostgreSQL and everything else
(`workers.cpu`), and the load average when it ended.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import http as bench_http
from ...workers import cpu
from ...workers.load import raw_load

USER = "local"
"""The user the corpus is loaded as, and the subject of every client's JWT."""


@dataclass(frozen=True)
class LoadPlan:
    workers: tuple[int, ...] = (1, 2)
    clients: tuple[int, ...] = (1, 8, 32)
    seconds: float = 10.0
    warmup_s: float = 5.0
    rounds: int = 2
    raw: bool = False


async def level(
    server: bench_http.Served, clients: int, queries: list[str], plan: LoadPlan, pg_pid: int | None
) -> dict[str, Any]:
    """One client count for `plan.seconds`: calls/s, latency, errors, CPU per party."""
    tokens = server.mint(USER, clients)
    parties = {"server": server.process.pid, "postgresql": pg_pid}
    before = cpu.snapshot(parties, {"clients": os.getpid()})
    if plan.raw:
        figures = await raw_load(server.url, tokens, queries, plan.seconds)
    else:
        figures = await bench_http.load(bench_http.http_client, server.url, tokens, queries, plan.seconds)
    figures["cpu_s"] = cpu.spent(before, cpu.snapshot(parties, {"clients": os.getpid()}))
    figures["load_average"] = cpu.load_average()
    return figures


async def workers_round(
    data_dir: Path, url: str, workers: int, queries: list[str], plan: LoadPlan, pg_pid: int | None
) -> dict[str, Any]:
    env = {"KNOWLEDGE_MCP_DATABASE_URL": url, "KNOWLEDGE_MCP_ITEM_STORE": "postgresql"}
    extra = ["--workers", str(workers)]
    async with bench_http.served(data_dir, auth=True, extra=extra, settings_env=env) as server:
        warm = server.mint(USER, max(plan.clients))
        await bench_http.load(bench_http.http_client, server.url, warm, queries, plan.warmup_s)
        levels = [await level(server, n, queries, plan, pg_pid) for n in plan.clients]
    return {"workers": workers, "levels": levels, "server_peak_rss_mb": server.peak_rss_mb}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per worker count and client count: calls/s of each round and their mean; and per client
    count, the mean calls/s of the most workers over that of one worker."""
    rates: dict[int, dict[int, list[float]]] = {}
    for run in runs:
        for lv in run["levels"]:
            rates.setdefault(run["workers"], {}).setdefault(lv["clients"], []).append(lv["calls_per_s"])
    means = {w: {c: round(statistics.fmean(r), 1) for c, r in by.items()} for w, by in rates.items()}
    out: dict[str, Any] = {
        "calls_per_s": {str(w): {str(c): r for c, r in by.items()} for w, by in rates.items()},
        "mean_calls_per_s": {str(w): {str(c): m for c, m in by.items()} for w, by in means.items()},
    }
    if 1 in means and len(means) > 1:
        most = max(means)
        out["ratio"] = {
            f"{most}_over_1": {
                str(c): round(means[most][c] / means[1][c], 2) if means[1][c] else None for c in means[1]
            }
        }
    return out


async def throughput(
    data_dir: Path, url: str, queries: list[str], plan: LoadPlan, pg_pid: int | None
) -> dict[str, Any]:
    """Every worker count in turn, `plan.rounds` times; each run's levels, and the summary."""
    runs = []
    for round_no in range(1, plan.rounds + 1):
        for workers in plan.workers:
            run = await workers_round(data_dir, url, workers, queries, plan, pg_pid)
            runs.append({"round": round_no} | run)
    return {
        "client": "raw" if plan.raw else "sdk",
        "seconds_per_level": plan.seconds,
        "runs": runs,
        "summary": summary(runs),
    }
