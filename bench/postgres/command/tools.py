"""The tools' latency on the PostgreSQL item store (`knowledge-mcp bench --database-url`).

Each source's search and get are timed as the SQLite bench times them (`store_calls`): in process
on the source's store, here the bench user's `PgStore`, every corpus query through the source's
search (a page of 10) after a warm-up, then its get in every retrieval mode on the first hit of
the first queries with any; without the MCP layer, as on SQLite. `knowledge_search` goes through
the real server (`build_server`, `item_store = "postgresql"`) and a real MCP client in memory, as
on SQLite (a page of 10, `seen: show` so every call costs the same), after a short warm-up (the
pool's connections, the server's caches).

Both are timed settled, as SQLite times its cached database: a small source's copy built and a
large source's common words read ahead (`memory.settled`) before the timed pass, where they
would otherwise be built beside it. The first `WARMUP_QUERIES` searches of each, before anything
is built, are timed apart (`first`): what a user meets right after the server starts.
"""

from __future__ import annotations

import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from mcp import Client
from pydantic import SecretStr

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.postgres.items import PostgresItems
from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.request import SearchMode, SearchRequest
from knowledge_mcp.sources.storage.db import database_path
from knowledge_mcp.sources.storage.postgres.pool import open_pg
from knowledge_mcp.sources.storage.postgres.store import PgStore
from knowledge_mcp.sources.storage.postgres.store.memory import settled

from ...evaluation import spread
from ...store_calls import GET_MODES, WARMUP_QUERIES, Searched, get_times, search_times, timed
from .throughput import USER


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


async def first_calls(client: Client, queries: list[str], mode: str) -> dict[str, Any]:
    """The first `WARMUP_QUERIES` `knowledge_search` calls of a server that has built nothing
    yet (the small sources' copies and the large ones' common words are built beside them)."""
    took = [
        (await call(client, "knowledge_search", _arguments(q, mode)))[0] for q in queries[:WARMUP_QUERIES]
    ]
    return {"calls": len(took)} | spread(took)


async def first_searches(source: Any, store: PgStore, queries: list[str], mode: SearchMode) -> dict[str, Any]:
    """The source's first `WARMUP_QUERIES` searches on a store that has built nothing for it yet."""
    took: list[float] = []
    for q in queries[:WARMUP_QUERIES]:
        with suppress(KnowledgeError):  # counted in the timed pass
            ms, _ = await timed(source.search(store, SearchRequest(q, limit=10, mode=mode), Defaults()))
            took.append(ms)
    return {"calls": len(took)} | spread(took)


async def aggregator_latency(client: Client, queries: list[str], mode: str) -> dict[str, Any]:
    """`knowledge_search` over every query after WARMUP_QUERIES: latency spread, hits, errors."""
    for query in queries[:WARMUP_QUERIES]:
        await call(client, "knowledge_search", _arguments(query, mode))
    took: list[float] = []
    errors = fell_back = with_hits = 0
    for query in queries:
        ms, answer = await call(client, "knowledge_search", _arguments(query, mode))
        if answer is None:
            errors += 1
            continue
        took.append(ms)
        fell_back += degraded(answer)
        with_hits += bool(answer.get("results"))
    figures = {"queries": len(queries), "with_hits": with_hits, "errors": errors}
    return figures | {"degraded": fell_back} | spread(took)


def _arguments(query: str, mode: str) -> dict[str, Any]:
    return {"query": query, "mode": mode, "limit": 10, "seen": "show"}


def figures(searched: Searched) -> dict[str, Any]:
    """A source's searches as the report gives them: counts, then p50 and p95 ms."""
    counts = {"queries": searched.queries, "with_hits": searched.with_hits, "errors": searched.errors}
    return counts | {"degraded": searched.degraded} | spread(searched.ms)


async def source_latency(
    data_dir: Path, url: str, queries: list[str], mode: SearchMode
) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Every source's search and get on the bench user's `PgStore`: figures per source, ms per get mode."""
    pg = await open_pg(url)
    search: dict[str, Any] = {}
    gets: dict[str, list[float]] = {m: [] for m in GET_MODES}
    try:
        for name, source in SOURCES.items():
            store = PgStore(pg, USER, name, database_path(data_dir, USER, name))
            first = await first_searches(source, store, queries, mode)
            # A small source is ranked from its copy in memory once built, a large one reads its
            # common words ahead: both done before timing, as the SQLite bench waits for its
            # memory index.
            await settled(pg, (USER, name), source.weights)
            searched = await search_times(source, store, queries, mode)
            search[f"{name}_search"] = figures(searched) | {"first": first}
            for m, ms in (await get_times(source, store, searched.firsts)).items():
                gets[m] += ms
    finally:
        await pg.close()
    return search, gets


async def tool_latency(data_dir: Path, url: str, queries: list[str], mode: SearchMode) -> dict[str, Any]:
    """Each source's search and get in process on its store, `knowledge_search` through the client."""
    search, gets = await source_latency(data_dir, url, queries, mode)
    mcp, services = build_server(pg_settings(data_dir, url))
    try:
        async with Client(mcp) as client:
            items = services.backend.items
            assert isinstance(items, PostgresItems)
            first = await first_calls(client, queries, mode)
            await items.settled(USER, list(SOURCES))  # copies and common words, as SQLite's `settled`
            search["knowledge_search"] = await aggregator_latency(client, queries, mode) | {"first": first}
    finally:
        await services.close()
    return {
        "mode": mode,
        "search_ms": search,
        "get_ms": {m: {"calls": len(ms)} | spread(ms) for m, ms in gets.items()},
    }
