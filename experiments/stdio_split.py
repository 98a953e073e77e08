"""Where a `knowledge_search` call over stdio spends its time: each party's p50, call by call.

    python -m experiments.stdio_split --data-dir D [--queries N] [--user eval]

One stdio server (this tree's, `bench.http.server_env`) started through this module's `serve`
mode, which puts timers at its edges and around the tool's stages before it runs the CLI; the
official client (with its output-schema check) with timers at its own edges. Each query makes
the calls of `bench/stdio/calls.py`: the floor (an unknown tool), then top-10 and top-100,
lexical and hybrid, `seen: show`. Both processes stamp `time.perf_counter` (CLOCK_MONOTONIC,
one clock for the machine), so the server's stamps fall between the client's: the request's
way in (client to the server reading it), the server's handling (its parse and middleware, the
search's stages, the text, `dump`, the SDK's check and wire form, the JSON line), the answer's
way out (the server's write to the client's reading its line) and the client's share (parsing
the line, the result model, the schema check). Prints JSON: each call kind's parties' p50 in ms,
and the mean length of its line. Dev only: it patches functions of both processes.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

Events = list[tuple[str, float]]
ID = re.compile(r'"id":(\d+)')
STAGES = ("knowledge_search", "fan_out", "merged_response", "fill_details", "record_results", "tool_result")


def _timed(events: Events, owner: Any, name: str, label: str | None = None) -> None:
    """`owner.name` (a function or coroutine function) stamping `<label>0` and `<label>1`."""
    fn, label = getattr(owner, name), label or name
    if inspect.iscoroutinefunction(fn):

        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            events.append((label + "0", time.perf_counter()))
            try:
                return await fn(*args, **kwargs)
            finally:
                events.append((label + "1", time.perf_counter()))

        setattr(owner, name, timed_async)
        return

    def timed(*args: Any, **kwargs: Any) -> Any:
        events.append((label + "0", time.perf_counter()))
        try:
            return fn(*args, **kwargs)
        finally:
            events.append((label + "1", time.perf_counter()))

    setattr(owner, name, timed)


def serve(argv: list[str]) -> int:
    """The server with its timers: the CLI's `serve`, its stamps written to $STDIO_SPLIT_OUT."""
    import atexit

    import mcp_types.jsonrpc as jsonrpc

    import knowledge_mcp.aggregator.search as search
    import knowledge_mcp.aggregator.tools as tools
    import knowledge_mcp.server.sessions.state as state
    import knowledge_mcp.server.transports.inbound as inbound
    import knowledge_mcp.server.transports.stdio as stdio
    from knowledge_mcp.server.cli import main

    events: Events = []
    read = inbound.read_message

    def read_message(line: str | bytes) -> Any:
        found = ID.search(str(line[:200]))
        events.append((f"in:{found.group(1) if found else '-'}", time.perf_counter()))
        return read(line)

    setattr(stdio, "read_message", read_message)  # noqa: B010 (the name stdio.py imported)
    _timed(events, jsonrpc.JSONRPCResponse, "model_dump_json", "line")
    for owner, name in (
        (tools, "knowledge_search"),
        (tools, "tool_result"),
        (tools, "render_knowledge_search"),
    ):
        _timed(events, owner, name)
    for name in ("fan_out", "merged_response", "fill_details"):
        _timed(events, search, name)
    _timed(events, state.StoredSession, "record_results")
    atexit.register(lambda: Path(os.environ["STDIO_SPLIT_OUT"]).write_text(json.dumps(events)))
    sys.argv = ["knowledge-mcp", *argv]
    return main()


async def drive(data_dir: Path, user: str, queries: Sequence[str], out: Path) -> tuple[Events, list[str]]:
    """The client's stamps and the kind of each call, in order."""
    import mcp.client.stdio as client_stdio
    from mcp import Client, StdioServerParameters
    from mcp.client.session import ClientSession

    from knowledge_mcp.bench import http as bench_http
    from knowledge_mcp.bench.stdio.calls import LIMITS, floor_call

    events: Events = []
    parse = client_stdio._parse_line

    def parse_line(line: str) -> Any:
        events.append(("got", time.perf_counter()))
        try:
            return parse(line)
        finally:
            events.append(("parsed", time.perf_counter()))

    client_stdio._parse_line = parse_line
    _timed(events, ClientSession, "validate_tool_result", "check")
    env = {**bench_http.server_env(), "STDIO_SPLIT_OUT": str(out)}
    args = ["-m", "experiments.stdio_split", "--serve", "serve", "--transport", "stdio"]
    args += ["--data-dir", str(data_dir), "--user", user]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(Path.cwd()))
    kinds: list[str] = []
    shapes = [(f"{mode} top-{limit}", limit, mode) for mode in ("lexical", "hybrid") for limit in LIMITS]
    async with Client(params) as client:
        await client.list_tools()
        for n, query in enumerate([queries[0], *queries]):  # the first round warms the server
            events.append(("call0", time.perf_counter()))
            await floor_call(client)
            events.append(("call1", time.perf_counter()))
            kinds.append("floor" if n else "warm")
            for kind, limit, mode in shapes:
                events.append(("call0", time.perf_counter()))
                arguments = {"query": query, "limit": limit, "mode": mode, "seen": "show"}
                await client.call_tool("knowledge_search", arguments)
                events.append(("call1", time.perf_counter()))
                kinds.append(kind if n else "warm")
    return events, kinds


def parties(client: Events, server: Events, kinds: list[str]) -> dict[str, Any]:
    """Each kind of call's parties, p50 ms, from the stamps of both sides."""
    merged = sorted([(t, e) for e, t in client] + [(t, e) for e, t in server])
    calls: list[dict[str, float]] = []
    for t, event in merged:
        if event == "call0":
            calls.append({})
        if calls:
            calls[-1].setdefault(event.split(":")[0], t)
    spans = {
        "request in (client call to the server reading its line)": ("call0", "in"),
        "server: parse, middleware, session (to the tool)": ("in", "knowledge_search0"),
        "server: fan-out": ("fan_out0", "fan_out1"),
        "server: merge, build, details": ("merged_response0", "merged_response1"),
        "server:   of which details": ("fill_details0", "fill_details1"),
        "server: session write": ("record_results0", "record_results1"),
        "server: search in all": ("knowledge_search0", "knowledge_search1"),
        "server: text": ("render_knowledge_search0", "render_knowledge_search1"),
        "server: dump (tool_result)": ("tool_result0", "tool_result1"),
        "server: SDK (check, wire form) to the JSON line": ("tool_result1", "line0"),
        "server: JSON line": ("line0", "line1"),
        "server: in all (read to line)": ("in", "line1"),
        "answer out (line to the client reading it)": ("line1", "got"),
        "client: parse the line": ("got", "parsed"),
        "client: result model": ("parsed", "check0"),
        "client: schema check": ("check0", "check1"),
        "call in all": ("call0", "call1"),
    }
    report: dict[str, Any] = {}
    for kind in dict.fromkeys(k for k in kinds if k != "warm"):
        rows = [c for c, k in zip(calls, kinds, strict=False) if k == kind]
        report[kind] = {
            name: round(statistics.median(c[b] - c[a] for c in rows) * 1000, 2)
            for name, (a, b) in spans.items()
            if all(a in c and b in c for c in rows)
        }
    return report


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["--serve"]:
        return serve(args_in[1:])
    parser = argparse.ArgumentParser(prog="python -m experiments.stdio_split")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--user", default="eval")
    parser.add_argument("--beir", type=Path, default=Path("/work/shared/data/scifact"))
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args(args_in)
    from knowledge_mcp.bench.stdio.calls import beir_test_queries

    queries = beir_test_queries(args.beir)[: args.queries]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "server.json"
        client, kinds = anyio.run(drive, args.data_dir, args.user, queries, out)
        server = [(str(e), float(t)) for e, t in json.loads(out.read_text())]
    print(json.dumps(parties(client, server, kinds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
