"""The tools' latency on the PostgreSQL item store, in process (`knowledge-mcp bench --database-url`).

The real server (`build_server`, `item_store = "postgresql"`) and a real MCP client in memory:
every corpus query through each source's `*_search` and through `knowledge_search` (a page of
10, `seen: show` so every call costs the same), after a short warm-up per tool (the pool's
connections, the server's caches); then each source's `*_get` in every retrieval mode on the
first hit of the first queries with any, as the SQLite bench reads them (`phases.GET_MODES`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from mcp import Client
from pydantic import SecretStr

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.registry import SOURCE_NAMES

from ...evaluation import spread
from ...phases import GET_HITS, GET_MODES

WARMUP_QUERIES = 20
SEARCH_TOOLS = [f"{name}_search" for name in SOURCE_NAMES] + ["knowledge_search"]


def pg_settings(data_dir: Path, url: str) -> Settings:
    return Settings(
        data_dir=data_dir,
        item_store="postgresql",
        database_url=SecretStr(url),
        embed_in_background=False,
        log_level="WARNING",
        rate_limit_per_minute=0,
    )


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[float, Any]:
    """Milliseconds of one call and its structured answer (None for a tool error)."""
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, None if result.is_error else (result.structured_content or {})


def degraded(answer: dict[str, Any]) -> bool:
    """An answer that says it fell back (e.g. hybrid answered lexically on PostgreSQL)."""
    return bool(answer.get("degraded")) or any("lexical" in str(w) for w in answer.get("warnings") or [])


async def search_tool(
    client: Client, tool: str, queries: list[str], mode: str
) -> tuple[dict[str, Any], list[Any]]:
    """One tool over every query: latency spread, hits, errors; and the first hit of each query."""
    for query in queries[:WARMUP_QUERIES]:
        await call(client, tool, {"query": query, "mode": mode, "limit": 10} | _seen(tool))
    took: list[float] = []
    firsts: list[Any] = []
    errors = fell_back = 0
    for query in queries:
        ms, answer = await call(client, tool, {"query": query, "mode": mode, "limit": 10} | _seen(tool))
        if answer is None:
            errors += 1
            continue
        took.append(ms)
        fell_back += degraded(answer)
        results = answer.get("results") or []
        firsts.append((results[0], query) if results else None)
    figures = {"queries": len(queries), "with_hits": sum(f is not None for f in firsts), "errors": errors}
    return figures | {"degraded": fell_back} | spread(took), firsts


def _seen(tool: str) -> dict[str, str]:
    return {"seen": "show"} if tool == "knowledge_search" else {}


async def get_tool(client: Client, source: str, id_arg: str, firsts: list[Any]) -> dict[str, list[float]]:
    """`<source>_get` on the first GET_HITS hits, in every retrieval mode: ms per mode."""
    took: dict[str, list[float]] = {mode: [] for mode in GET_MODES}
    for hit, query in [f for f in firsts if f is not None][:GET_HITS]:
        for mode, retrieval in GET_MODES.items():
            arguments = {
                id_arg: hit["uri"],
                "query": query,
                "retrieval": retrieval.model_dump(exclude_none=True),
            }
            if hit.get("loc"):
                arguments["loc"] = hit["loc"]
            ms, answer = await call(client, f"{source}_get", arguments)
            if answer is None:
                raise RuntimeError(f"bench: {source}_get answered a tool error on {hit['uri']}")
            took[mode].append(ms)
    return took


async def tool_latency(data_dir: Path, url: str, queries: list[str], mode: str) -> dict[str, Any]:
    """Every `*_search`, `knowledge_search` and `*_get` through the real server in memory."""
    mcp, host = build_server(pg_settings(data_dir, url))
    search: dict[str, Any] = {}
    gets: dict[str, list[float]] = {m: [] for m in GET_MODES}
    try:
        async with Client(mcp) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            for tool in SEARCH_TOOLS:
                search[tool], firsts = await search_tool(client, tool, queries, mode)
                source = tool.removesuffix("_search")
                if source in SOURCE_NAMES:
                    id_arg = listed[f"{source}_get"].input_schema["required"][0]
                    for m, ms in (await get_tool(client, source, id_arg, firsts)).items():
                        gets[m] += ms
    finally:
        await host.close()
    return {
        "mode": mode,
        "search_ms": search,
        "get_ms": {m: {"calls": len(ms)} | spread(ms) for m, ms in gets.items()},
    }
