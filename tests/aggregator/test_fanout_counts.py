"""knowledge_search reads each source's term counts once: the counts it reads for the shared
bm25 scale are handed to the source's search, whose FTS5 plan takes them instead of asking the
database again; the pages are the same either way."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from knowledge_mcp.aggregator import fanout
from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.search.lexical.term_stats import IndexStats, TermStats
from knowledge_mcp.sources.storage.db import Database
from tests.aggregator.conftest import structured
from tests.conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio

QUERIES = ["sourdough starter hydration", "sour* bread", '"code review" security', "ship captain", "dal"]


def looked_up(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources whose term counts are read (`TermStats.lookup`), one entry a read, from now on."""
    lookups: list[str] = []
    lookup = TermStats.lookup

    async def counted(
        self: TermStats, db: Database, terms: list[str], same_rows: Mapping[str, str] | None = None
    ) -> IndexStats:
        lookups.append(db.path.stem)
        return await lookup(self, db, terms, same_rows)

    monkeypatch.setattr(TermStats, "lookup", counted)
    return lookups


def page(result: Any) -> list[tuple[str, Any, float]]:
    return [(r["uri"], r.get("loc"), r["score"]) for r in structured(result)["results"]]


async def test_each_source_counts_a_querys_terms_once_per_knowledge_search(
    connect: Callable[..., Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every source "large": searched by FTS5 under a plan, which reads the counts.
    async with connect(memory_index_max_chunks=0) as client:
        await client.call_tool("knowledge_search", {"query": "warm up", "seen": "show"})
        lookups = looked_up(monkeypatch)
        for query in QUERIES:
            lookups.clear()
            found = await client.call_tool("knowledge_search", {"query": query, "seen": "show"})
            assert structured(found)["results"], query
            assert sorted(lookups) == sorted(SOURCES), query


async def test_knowledge_search_pages_are_the_same_when_each_search_reads_its_own_counts(
    connect: Callable[..., Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = fanout.counted

    async def not_handed_down(stores: Any, name: str, request: Any) -> Any:
        store = await counted(stores, name, request)
        request.index_stats = None  # the search reads its counts again
        return store

    for settings in ({"memory_index_max_chunks": 0}, {}):
        async with connect(**settings) as client:
            handed = [
                await client.call_tool("knowledge_search", {"query": q, "seen": "show"}) for q in QUERIES
            ]
            with monkeypatch.context() as m:
                m.setattr(fanout, "counted", not_handed_down)
                own = [
                    await client.call_tool("knowledge_search", {"query": q, "seen": "show"}) for q in QUERIES
                ]
        assert [page(r) for r in handed] == [page(r) for r in own]
        assert all(page(r) for r in handed)


async def test_a_source_that_cannot_count_its_terms_is_left_out_of_the_scale_and_the_others_answer(
    connect: Callable[..., Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    lookup = TermStats.lookup

    async def failing_for_prompts(
        self: TermStats, db: Database, terms: list[str], same_rows: Mapping[str, str] | None = None
    ) -> IndexStats:
        if db.path.stem == "prompts":
            raise OSError("disk I/O error")
        return await lookup(self, db, terms, same_rows)

    async with connect(memory_index_max_chunks=0) as client:
        await client.call_tool("knowledge_search", {"query": "warm up", "seen": "show"})
        monkeypatch.setattr(TermStats, "lookup", failing_for_prompts)
        with anyio.fail_after(30):  # no source waits for the one that could not count
            found = structured(await client.call_tool("knowledge_search", {"query": "ship captain"}))
    answered = {r["uri"].split("://")[0] for r in found["results"]}
    assert answered and "prompts" not in answered
    assert found["degraded"] and "prompts" in found["provider_hint"]


async def test_sources_searched_from_their_memory_copy_count_words_and_prefixes_without_an_fts5_probe(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probed: list[tuple[str, list[str]]] = []
    lookup = TermStats.lookup

    async def counted(
        self: TermStats, db: Database, terms: list[str], same_rows: Mapping[str, str] | None = None
    ) -> IndexStats:
        probed.append((db.path.stem, terms))
        return await lookup(self, db, terms, same_rows)

    mcp, host = build_server(Settings(data_dir=imported))
    async with Client(mcp) as client:  # the fixtures' sources are small: each has its memory copy
        await client.call_tool("knowledge_search", {"query": "warm up", "seen": "show"})
        await host.pool.settled()
        monkeypatch.setattr(TermStats, "lookup", counted)
        for query in ["sourdough starter hydration", '"code review" security', "sour* bread"]:
            probed.clear()
            found = await client.call_tool("knowledge_search", {"query": query, "seen": "show"})
            assert structured(found)["results"], query
            assert sorted(name for name, _ in probed) == sorted(SOURCES), query
            # Words, phrases' words and prefixes all counted by the copy (`counted_terms`).
            assert all(not terms for _, terms in probed), (query, probed)
    await host.pool.close()


async def test_sources_without_chunks_are_not_counted_and_the_pages_are_the_same(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user whose knowledge is notes: the other four sources hold nothing, and their counts
    (nothing, to the shared scale) are known from their memory copies without reading them. The
    pages are those of a server that keeps no memory copy, where every source's counts are read."""
    await import_into(data_dir, "notes", FIXTURES / "notes")
    queries = ["sourdough starter hydration", '"code review" security', "sour* bread", "postgres backup"]
    probed = looked_up(monkeypatch)

    async def pages(**settings: Any) -> list[Any]:
        mcp, host = build_server(Settings(data_dir=data_dir, **settings))
        try:
            async with Client(mcp) as client:
                await client.call_tool("knowledge_search", {"query": "warm up", "seen": "show"})
                await host.pool.settled()
                probed.clear()
                return [
                    structured(await client.call_tool("knowledge_search", {"query": q, "seen": "show"}))
                    for q in queries
                ]
        finally:
            await host.close()

    known = await pages()
    assert probed and set(probed) == {"notes"}
    read = await pages(memory_index_max_chunks=0)
    assert set(probed) == set(SOURCES)
    assert known == read
    assert sum(bool(page["results"]) for page in known) >= 2
