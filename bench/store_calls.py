"""Each source's search and get, called in process on a store: what `knowledge-mcp bench` times
per source, on either store.

The SQLite bench (`phases.bench_sources`) hands these a `SqliteStore(db, name)`, the PostgreSQL
bench (`postgres/command/tools.py`) a `PgStore(pg, user, name, path)`: the same calls on the same
queries after the same warm-up, so both reports' per-source `search_ms` and `get_ms` time the
same thing, the source's pipeline on its store. Neither includes the MCP layer (JSON, the output
schema check); `knowledge_search`, timed through the in-memory client on both, does.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.models import ResultItem, Retrieval, SearchResponse
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.request import SearchMode, SearchRequest
from knowledge_mcp.sources.source import ChunkedSource
from knowledge_mcp.sources.storage.store import Store

GET_MODES: dict[str, Retrieval] = {
    "snippet": Retrieval(mode="snippet"),
    "chunk": Retrieval(mode="chunk"),
    "chunk_with_siblings": Retrieval(mode="chunk_with_siblings", max_tokens=1000),
    "full": Retrieval(mode="full", max_tokens=4000),
}
GET_HITS = 50  # per source: the first hits of the first queries with any, each read in every mode
WARMUP_QUERIES = 20  # searched untimed first: the store's caches, connections and prepared plans


async def timed(call: Awaitable[Any]) -> tuple[float, Any]:
    """Milliseconds to await `call`, and its result."""
    t0 = time.perf_counter()
    out = await call
    return (time.perf_counter() - t0) * 1000, out


@dataclass
class Searched:
    """One source's searches: the time of each answered one, and what they answered."""

    queries: int = 0
    ms: list[float] = field(default_factory=list)
    with_hits: int = 0
    errors: int = 0
    """Queries the source refused with a tool error (`KnowledgeError`): not timed."""
    degraded: int = 0
    """Answers that say they fell back (e.g. hybrid answered lexically)."""
    firsts: list[tuple[ResultItem, str]] = field(default_factory=list)
    """The first hit and its query, of the first GET_HITS queries with any: what `get_times` reads."""


def fell_back(response: SearchResponse[Any]) -> bool:
    return bool(response.degraded) or any("lexical" in w for w in response.warnings)


async def search_times(
    source: ChunkedSource[Any], store: Store, queries: list[str], mode: SearchMode = "auto"
) -> Searched:
    """`source.search` of every query on `store` (a page of 10), after WARMUP_QUERIES untimed."""
    defaults = Defaults()
    for q in queries[:WARMUP_QUERIES]:
        with suppress(KnowledgeError):  # counted in the timed pass
            await source.search(store, SearchRequest(q, limit=10, mode=mode), defaults)
    out = Searched(queries=len(queries))
    for q in queries:
        try:
            ms, response = await timed(source.search(store, SearchRequest(q, limit=10, mode=mode), defaults))
        except KnowledgeError:
            out.errors += 1
            continue
        out.ms.append(ms)
        out.degraded += fell_back(response)
        if response.results:
            out.with_hits += 1
            if len(out.firsts) < GET_HITS:
                out.firsts.append((response.results[0], q))
    return out


async def get_times(
    source: ChunkedSource[Any], store: Store, firsts: list[tuple[ResultItem, str]]
) -> dict[str, list[float]]:
    """`source.get` of each hit in every GET_MODES retrieval mode, with its query: ms per mode."""
    defaults = Defaults()
    took: dict[str, list[float]] = {mode: [] for mode in GET_MODES}
    for hit, q in firsts:
        for mode, retrieval in GET_MODES.items():
            call = source.get(store, hit.id, loc=hit.loc, query=q, retrieval=retrieval, defaults=defaults)
            took[mode].append((await timed(call))[0])
    return took
