"""`knowledge_search` pages on a BEIR dataset's test queries, kept to compare two trees byte for byte.

    python -m experiments.pages --data-dir D --out PAGES.jsonl [--compare OTHER.jsonl] [--queries N]
    python -m experiments.pages --data-dir D --stages [--queries N]

A real server (`build_server`, the in-memory MCP client) over a data dir whose notes are the
dataset's corpus (`eval --retrieval hybrid --data-dir D` filled one; SciFact: its 300 test
queries). Each query is asked in every `SHAPES` entry (top-10 and top-100, lexical and hybrid,
and top-100 with `reason`), `seen: show`, once the memory copy of the index is ready (the pages
FTS5 gives before it differ: `match_count`, `total_estimated`); each answer's structured content
and text are written as one JSON line. `--compare` reads another run's file (the same queries on
another tree: run it with that tree on `PYTHONPATH`) and says how many pages differ and where the
first one does;
exit status 1 when any does. Prints JSON: the pages written, the in-process p50 per shape, and
the comparison.

`--stages` times the page's own cost instead, stage by stage, on the pages the merge cut for
the first N queries at top-100 lexical: the result models built from the deferred hits, their
details (`fill_details`), the response model, the text, `dump` (`tool_result`) and the SDK's
wire form and JSON line; each page's best of 7 rounds, the median over pages, in ms. Run it in
two trees alternately (each with its own Python) to compare them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from knowledge_mcp.bench.evaluation import percentile
from knowledge_mcp.bench.stdio.calls import beir_test_queries
from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings

SHAPES: tuple[dict[str, Any], ...] = (
    {"limit": 10, "mode": "lexical"},
    {"limit": 100, "mode": "lexical"},
    {"limit": 10, "mode": "hybrid"},
    {"limit": 100, "mode": "hybrid"},
    {"limit": 100, "mode": "lexical", "fields": ["reason"]},
)


async def pages(data_dir: Path, user: str, queries: Sequence[str]) -> tuple[list[str], dict[str, float]]:
    """One JSON line per (query, shape), and each shape's p50 in ms."""
    settings = Settings(
        data_dir=data_dir, user=user, embed_in_background=False, rate_limit_per_minute=0, log_level="WARNING"
    )
    mcp, host = build_server(settings)
    lines: list[str] = []
    ms: dict[str, list[float]] = {json.dumps(s): [] for s in SHAPES}
    try:
        async with Client(mcp) as client:
            for shape in SHAPES:  # warm: the databases open, the model loaded
                await client.call_tool("knowledge_search", {"query": queries[0], "seen": "show", **shape})
            await host.pool.settled()  # the memory copy of the index ready (FTS5 answers until then)
            for query in queries:
                for shape in SHAPES:
                    t0 = time.perf_counter()
                    result = await client.call_tool(
                        "knowledge_search", {"query": query, "seen": "show", **shape}
                    )
                    ms[json.dumps(shape)].append((time.perf_counter() - t0) * 1000)
                    if result.is_error:
                        raise RuntimeError(f"{query!r} {shape}: {result.content}")
                    text = [getattr(c, "text", "") for c in result.content]
                    page = {
                        "query": query,
                        "shape": shape,
                        "structured": result.structured_content,
                        "text": text,
                    }
                    lines.append(json.dumps(page, ensure_ascii=False, sort_keys=True))
    finally:
        await host.close()
    return lines, {shape: round(percentile(values, 50), 2) for shape, values in ms.items()}


STAGES = ("build", "details", "response", "text", "dump", "sdk_line")


async def merged_pages(data_dir: Path, user: str, queries: Sequence[str]) -> list[list[Any]]:
    """The page (deferred hits) the merge cut for each query, top-100 lexical."""
    from knowledge_mcp.aggregator import search
    from knowledge_mcp.aggregator.merging.merge import cut_page as cut

    captured: list[list[Any]] = []

    def capturing(*args: Any, **kwargs: Any) -> Any:
        page = cut(*args, **kwargs)
        captured.append(list(page.results))
        return page

    setattr(search, "cut_page", capturing)  # noqa: B010 (the name search.py imported)
    settings = Settings(
        data_dir=data_dir, user=user, embed_in_background=False, rate_limit_per_minute=0, log_level="WARNING"
    )
    mcp, host = build_server(settings)
    shape = {"limit": 100, "mode": "lexical", "seen": "show"}
    try:
        async with Client(mcp) as client:
            await client.call_tool("knowledge_search", {"query": queries[0], **shape})
            await host.pool.settled()
            captured.clear()
            for query in queries:
                await client.call_tool("knowledge_search", {"query": query, **shape})
    finally:
        setattr(search, "cut_page", cut)  # noqa: B010
        await host.close()
    return captured


def page_stages(page: list[Any]) -> list[float]:
    """Each stage's seconds for one page, from its deferred hits to the JSON-RPC line."""
    from mcp_types import JSONRPCResponse

    from knowledge_mcp.aggregator.models import KnowledgeSearchResponse
    from knowledge_mcp.aggregator.rendering import render_knowledge_search
    from knowledge_mcp.sources.search.describe.details import fill_details
    from knowledge_mcp.sources.tooling import tool_result

    t = [time.perf_counter()]
    results = [r.build() if hasattr(r, "build") else r for r in page]
    t.append(time.perf_counter())
    fill_details(results)
    t.append(time.perf_counter())
    top = max((r.score for r in results), default=None)
    response = KnowledgeSearchResponse(
        results=results,
        count=len(results),
        has_more=True,
        next_offset=100,
        total_estimated=1000,
        top_score=top,
    )
    t.append(time.perf_counter())
    text = render_knowledge_search(response)
    t.append(time.perf_counter())
    result = tool_result(response, text)
    t.append(time.perf_counter())
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    JSONRPCResponse(jsonrpc="2.0", id=1, result=wire).model_dump_json(by_alias=True, exclude_none=True)
    t.append(time.perf_counter())
    return [b - a for a, b in itertools.pairwise(t)]


def stages(data_dir: Path, user: str, queries: Sequence[str], rounds: int = 7) -> dict[str, Any]:
    captured = anyio.run(merged_pages, data_dir, user, queries)
    best = [[float("inf")] * len(STAGES) for _ in captured]
    for _ in range(rounds):
        for n, page in enumerate(captured):
            best[n] = [min(x, y) for x, y in zip(best[n], page_stages(page), strict=True)]
    report: dict[str, Any] = {
        name: round(statistics.median(b[i] for b in best) * 1000, 3) for i, name in enumerate(STAGES)
    }
    report["sum"] = round(sum(report.values()), 3)
    return {"pages": len(captured), "stages_ms": report}


def compare(lines: list[str], other: Path) -> dict[str, Any]:
    theirs = other.read_text(encoding="utf-8").splitlines()
    differ = [n for n, (a, b) in enumerate(zip(lines, theirs, strict=False)) if a != b]
    first = None
    if differ:
        ours, other_page = json.loads(lines[differ[0]]), json.loads(theirs[differ[0]])
        first = {"query": ours["query"], "shape": ours["shape"], "ours": ours, "theirs": other_page}
    return {"pages": len(lines), "other_pages": len(theirs), "differ": len(differ), "first": first}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.pages")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--user", default="eval")
    parser.add_argument("--beir", type=Path, default=Path("/work/shared/data/scifact"))
    parser.add_argument("--queries", type=int, default=None, help="the first N test queries (default: all)")
    parser.add_argument("--out", type=Path, default=None, help="write the pages here (JSON lines)")
    parser.add_argument("--compare", type=Path, default=None, help="another run's pages")
    parser.add_argument("--stages", action="store_true", help="time the page's own stages instead")
    args = parser.parse_args(argv)
    queries = beir_test_queries(args.beir)[: args.queries]
    if args.stages:
        json.dump(stages(args.data_dir, args.user, queries), sys.stdout)
        print()
        return 0
    if args.out is None:
        parser.error("--out is required (or --stages)")
    lines, p50 = anyio.run(pages, args.data_dir, args.user, queries)
    args.out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    report: dict[str, Any] = {"pages": len(lines), "p50_ms": p50}
    if args.compare is not None:
        report["compare"] = compare(lines, args.compare)
    json.dump(report, sys.stdout)
    print()
    return 1 if report.get("compare", {}).get("differ") else 0


if __name__ == "__main__":
    raise SystemExit(main())
