"""Work knowledge_search does once, not once per source or per fetched hit: a hit's fields
that need another source (a chat's character card) are filled after the merge for the page's
hits only, as the source's own tool fills them; the glossaries are read once a call; only the
page's hits are built as results; every source's term counts are read before the searches."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.aggregator import fanout
from knowledge_mcp.sources.chats.links import CharacterLinks
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.search.glossary import expand
from knowledge_mcp.sources.search.glossary.file import GLOSSARY_FILE, Glossary
from knowledge_mcp.sources.search.lexical.term_stats import index_stats
from knowledge_mcp.sources.source import ChunkedSource
from tests.aggregator.conftest import structured

pytestmark = pytest.mark.anyio


async def test_a_chat_hit_links_its_character_card_as_chats_search_does(
    connect: Callable[..., Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    id_for = CharacterLinks.id_for

    async def counted(self: CharacterLinks, name: str) -> str | None:
        asked.append(name)
        return await id_for(self, name)

    async with connect() as client:
        alone = structured(await client.call_tool("chats_search", {"query": "sextant"}))["results"][0]
        monkeypatch.setattr(CharacterLinks, "id_for", counted)
        found = structured(
            await client.call_tool("knowledge_search", {"query": "sextant", "seen": "show", "limit": 1})
        )
    (hit,) = found["results"]
    assert hit["uri"] == alone["uri"] and alone["character_id"]
    assert hit["character_id"] == alone["character_id"]
    assert asked == ["Captain Mirelle"]  # the page's one chat hit, not every hit the chats fetched


async def test_a_chat_hit_fetched_but_left_off_the_page_asks_for_no_character_card(
    connect: Callable[..., Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Any] = []

    async def counted(self: CharacterLinks, name: str) -> str | None:
        asked.append(name)
        return None

    async with connect() as client:
        chats = structured(await client.call_tool("chats_search", {"query": "Mirelle"}))["results"]
        monkeypatch.setattr(CharacterLinks, "id_for", counted)
        found = structured(
            await client.call_tool("knowledge_search", {"query": "Mirelle", "seen": "show", "limit": 1})
        )
    # The chats fetch their hit of Mirelle's chat (the merge takes the card first) ...
    assert chats[0]["character_name"] == "Captain Mirelle"
    assert [r["uri"].split("://")[0] for r in found["results"]] == ["characters"]
    assert found["has_more"]
    assert asked == []  # ... and no card is looked up for a hit the page leaves off


async def test_the_users_glossary_is_read_once_a_call_and_expands_the_query_as_one_source_does(
    connect: Callable[..., Client], imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[Any] = []
    read_glossary = expand.read_glossary

    def counted(path: Any, name: str = "glossary") -> Glossary:
        read.append(path)
        return read_glossary(path, name)

    monkeypatch.setattr(expand, "read_glossary", counted)
    (user,) = {db.parent for db in imported.rglob("notes.db")}
    (user / GLOSSARY_FILE).write_text("sourdough: [levain]\n", encoding="utf-8")
    try:
        async with connect() as client:
            alone = structured(await client.call_tool("notes_search", {"query": "sourdough"}))
            read.clear()
            found = structured(
                await client.call_tool("knowledge_search", {"query": "sourdough", "seen": "show"})
            )
    finally:
        (user / GLOSSARY_FILE).unlink()
    assert read == [user / GLOSSARY_FILE]  # five sources, one look at the user's glossary
    assert found["expanded_terms"] == alone["expanded_terms"] == ["sourdough → levain"]


async def test_only_the_hits_the_merge_keeps_are_built_as_results(
    connect: Callable[..., Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    result = ChunkedSource.result

    def counted(self: ChunkedSource[Any], item: Any, chunk: Any, **hit: Any) -> Any:
        built.append(self.uri(item["item_id"]))
        return result(self, item, chunk, **hit)

    async with connect() as client:
        whole = structured(await client.call_tool("knowledge_search", {"query": "the", "seen": "show"}))
        monkeypatch.setattr(ChunkedSource, "result", counted)
        found = structured(
            await client.call_tool("knowledge_search", {"query": "the", "seen": "show", "limit": 2})
        )
    assert whole["count"] > 2  # the sources fetched more hits than the page keeps ...
    assert built == [r["uri"] for r in found["results"]]  # ... and only the page's were built
    assert found["results"] == whole["results"][:2]


async def test_every_source_hands_in_its_term_counts_before_any_source_searches(
    connect: Callable[..., Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[str] = []
    search = ChunkedSource.search

    async def counted(store: Any, name: str, query: Any, together: Any) -> Any:
        steps.append("count")
        return await index_stats(store, name, query, together)

    async def searched(self: ChunkedSource[Any], *args: Any) -> Any:
        steps.append("search")
        return await search(self, *args)

    async with connect() as client:
        await client.call_tool("knowledge_search", {"query": "warm up", "seen": "show"})
        monkeypatch.setattr(fanout, "index_stats", counted)
        monkeypatch.setattr(ChunkedSource, "search", searched)
        await client.call_tool("knowledge_search", {"query": "sourdough starter", "seen": "show"})
    # No count (SQLite on the loop's thread) waits on a search's statements on a worker thread.
    assert steps == ["count"] * len(SOURCES) + ["search"] * len(SOURCES)
