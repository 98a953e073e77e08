"""The first search after `serve` starts, against a warm one: the model loaded on first use
(`load_model_in_background = false`, as before) and in the background at start (the default).

    python -m experiments.first_call --data-dir DIR [--user eval] [--repeat 3] [--pause 3] [--warm 30]

Starts `knowledge-mcp serve --transport stdio` on DIR (SciFact imported with vectors, as
`knowledge-mcp eval --data-dir` leaves it) through the official client, `--repeat` times per
setting and per start-up: `immediate` calls `knowledge_search` (mode hybrid, top 10, SciFact train
queries) the moment `initialize` has returned and the tools are listed (as a host lists them
before any call; the client otherwise lists them inside its first call); `paused` waits `--pause`
seconds first (a person typing their first question), then makes the first call and `--warm`
more. The client's lazy import of `jsonschema` at the first tool result is paid before any
timing; its compile of the tool's output schema (~10 ms) stays in the first call. Prints JSON: per
setting the median over the repeats of `initialize`, of the first call (and how it was answered:
hybrid, or lexical with the loading hint) and of the warm calls' p50, and first / warm p50; and the
first query asked again after the warm calls (`first_query_warm_ms`, `first_over_same_query_warm`:
the first call against the same query warm, whatever that query costs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema  # noqa: F401  # the client imports it at its first tool result (~0.4 s): not the server's time
from mcp import Client, StdioServerParameters

from knowledge_mcp.bench import http as bench_http
from knowledge_mcp.bench.evaluation import load_beir, percentile

SCIFACT = Path("/work/shared/data/scifact")
SETTINGS = {"on_first_use": "false", "background": "true"}


async def search(client: Client, query: str) -> tuple[float, str]:
    """Milliseconds of one hybrid top-10 search, and how it was answered."""
    args = {"query": query, "limit": 10, "seen": "show", "mode": "hybrid"}
    t0 = time.perf_counter()
    result = await client.call_tool("knowledge_search", args)
    ms = (time.perf_counter() - t0) * 1000
    page = result.structured_content or {}
    hint = str(page.get("provider_hint") or "")
    return ms, "lexical (loading)" if "loading" in hint else str(page.get("score_type", "fts"))


async def start_once(
    data_dir: Path, user: str, loading: str, queries: list[str], pause: float
) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "knowledge_mcp",
            "serve",
            "--transport",
            "stdio",
            "--data-dir",
            str(data_dir),
            "--user",
            user,
        ],
        env=bench_http.server_env() | {"KNOWLEDGE_MCP_LOAD_MODEL_IN_BACKGROUND": loading},
    )
    t0 = time.perf_counter()
    async with Client(params) as client:
        initialize_ms = (time.perf_counter() - t0) * 1000
        await client.list_tools()  # as a host does before any call (else the client does it in the first)
        await asyncio.sleep(pause)
        first_ms, first_kind = await search(client, queries[0])
        warm = [(await search(client, q))[0] for q in queries[1:]]
        again = (await search(client, queries[0]))[0] if warm else None
    return {
        "initialize_ms": initialize_ms,
        "first_ms": first_ms,
        "first": first_kind,
        "warm_p50_ms": percentile(warm, 50) if warm else None,
        "first_query_warm_ms": again,
    }


async def measure(
    data_dir: Path, user: str, beir: Path, repeat: int, pause: float, warm: int
) -> dict[str, Any]:
    _, by_id, _, qids = load_beir(beir, "train", warm + 1)
    queries = [by_id[q] for q in qids]
    cases = [
        (f"{name}/{start}", loading, wait)
        for name, loading in SETTINGS.items()
        for start, wait in starts(pause)
    ]
    runs: dict[str, list[dict[str, Any]]] = {case: [] for case, _, _ in cases}
    for _ in range(repeat):  # the cases interleaved, so a busy minute weighs on each alike
        for case, loading, wait in cases:
            asked = queries if wait else queries[:1]
            runs[case].append(await start_once(data_dir, user, loading, asked, wait))
    report: dict[str, Any] = {"repeat": repeat, "pause_s": pause, "warm_calls": warm}
    for case, rows in runs.items():
        row: dict[str, Any] = {
            k: round(statistics.median(r[k] for r in rows), 1) for k in ("initialize_ms", "first_ms")
        }
        row["first"] = sorted({r["first"] for r in rows})
        warms = [r["warm_p50_ms"] for r in rows if r["warm_p50_ms"] is not None]
        if warms:
            row["warm_p50_ms"] = round(statistics.median(warms), 1)
            row["first_over_warm"] = round(row["first_ms"] / row["warm_p50_ms"], 2)
            again = statistics.median(r["first_query_warm_ms"] for r in rows if r["first_query_warm_ms"])
            row["first_query_warm_ms"] = round(again, 1)
            row["first_over_same_query_warm"] = round(row["first_ms"] / again, 2)
        report[case] = row
    return report


def starts(pause: float) -> tuple[tuple[str, float], ...]:
    return (("immediate", 0.0), ("paused", pause))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--user", default="eval")
    parser.add_argument("--beir", type=Path, default=SCIFACT)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pause", type=float, default=3.0)
    parser.add_argument("--warm", type=int, default=30)
    a = parser.parse_args()
    print(json.dumps(asyncio.run(measure(a.data_dir, a.user, a.beir, a.repeat, a.pause, a.warm)), indent=1))


if __name__ == "__main__":
    main()
