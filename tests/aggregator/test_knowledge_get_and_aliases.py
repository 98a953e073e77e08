"""knowledge_get routing, and the deep-research search/fetch aliases and their publication."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.aggregator.deep_research import is_deep_research_client
from knowledge_mcp.server.config import load_settings
from knowledge_mcp.sources.registry import SOURCES
from tests.aggregator.conftest import only_text_json, structured
from tests.conftest import item_id

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("source", sorted(SOURCES))
async def test_knowledge_get_routes_a_uri_to_its_source_and_marks_it_viewed(
    connect: Callable[..., Client], source: str
) -> None:
    async with connect() as client:
        hit = structured(
            await client.call_tool(
                "knowledge_search", {"query": "the", "sources": [source], "seen": "show", "limit": 1}
            )
        )["results"][0]
        by_uri = structured(
            await client.call_tool("knowledge_get", {"uri": hit["uri"], "session_id": f"get-{source}"})
        )
        by_pair = structured(await client.call_tool("knowledge_get", {"source": source, "id": item_id(hit)}))
        info = structured(await client.call_tool("session_info", {"session_id": f"get-{source}"}))
    assert by_uri["meta"]["uri"] == by_pair["meta"]["uri"] == hit["uri"]
    assert hit["uri"] in info["viewed"]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"uri": "videos://x"}, "uri"),
        ({"uri": "notes:/x"}, "uri"),
        ({}, "uri"),
        ({"uri": "notes://nope"}, "note_id"),
    ],
)
async def test_knowledge_get_errors_name_the_field(
    connect: Callable[..., Client], args: dict[str, Any], field: str
) -> None:
    async with connect() as client:
        result = await client.call_tool("knowledge_get", args)
    assert result.is_error and field in result.content[0].text  # type: ignore[union-attr]


async def test_search_and_fetch_have_the_exact_deep_research_shapes(connect: Callable[..., Client]) -> None:
    async with connect(client_name="openai-mcp") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        found = only_text_json(await client.call_tool("search", {"query": "meeting"}))
        fetched = [only_text_json(await client.call_tool("fetch", {"id": r["id"]})) for r in found["results"]]
    assert tools["search"].output_schema is None and tools["fetch"].output_schema is None
    assert list(found) == ["results"] and found["results"]
    sources = set()
    for hit, item in zip(found["results"], fetched, strict=True):
        assert set(hit) == {"id", "title", "url"} and hit["url"]
        assert set(item) == {"id", "title", "text", "url", "metadata"}
        assert item["id"] == hit["id"] and item["title"] == hit["title"] and item["url"] == hit["url"]
        assert item["text"].strip() and item["metadata"]["source"] == hit["id"].split("://")[0]
        sources.add(item["metadata"]["source"])
    assert len(sources) >= 2


async def test_fetch_of_an_unknown_id_is_a_tool_error(connect: Callable[..., Client]) -> None:
    async with connect(client_name="ChatGPT") as client:
        result = await client.call_tool("fetch", {"id": "notes://does-not-exist"})
    assert result.is_error


async def test_search_alias_applies_the_transport_session(
    connect: Callable[..., Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KNOWLEDGE_MCP_SESSION", "alias-session")
    async with connect(client_name="ChatGPT") as client:
        first = only_text_json(await client.call_tool("search", {"query": "the"}))
        second = only_text_json(await client.call_tool("search", {"query": "the"}))
    ids = [r["id"] for r in first["results"]]
    again = [r["id"] for r in second["results"]]
    # The default seen=downrank: what the first search returned now ranks at half its score.
    assert len(ids) == 20 and again[0] not in ids and again != ids


@pytest.mark.parametrize(
    ("mode", "client_name", "published"),
    [
        ("auto", "ChatGPT", True),
        ("auto", "openai-deep-research", True),
        ("auto", "claude-ai", False),
        ("auto", "my-researcher", True),  # matches deep_research_clients below
        ("always", "claude-ai", True),
        ("never", "ChatGPT", False),
    ],
)
async def test_aliases_are_published_by_mode_and_client_name(
    connect: Callable[..., Client], mode: str, client_name: str, published: bool
) -> None:
    settings = {"deep_research_aliases": mode, "deep_research_clients": ["my-research*"]}
    async with connect(client_name=client_name, **settings) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("search", {"query": "meeting"})
    assert ({"search", "fetch"} <= names) is published
    assert ("search" in names) is published and "knowledge_search" in names
    assert result.is_error is not published


async def test_aliases_stay_undotted_with_dotted_tool_names(connect: Callable[..., Client]) -> None:
    async with connect(client_name="ChatGPT", tool_names="dotted") as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert {"search", "fetch", "knowledge.search", "knowledge.get"} <= names


def test_client_matching_is_case_insensitive_and_takes_patterns() -> None:
    assert is_deep_research_client("OpenAI Deep Research", [])
    assert not is_deep_research_client(None, ["*"])
    assert is_deep_research_client("Acme-Agent", ["acme-*"])


def test_deep_research_settings_parse_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOWLEDGE_MCP_DEEP_RESEARCH_ALIASES", "always")
    monkeypatch.setenv("KNOWLEDGE_MCP_DEEP_RESEARCH_CLIENTS", "acme-*, other")
    monkeypatch.setenv("KNOWLEDGE_MCP_SOURCE_TIMEOUT_S", "2.5")
    settings = load_settings()
    assert settings.deep_research_aliases == "always" and settings.source_timeout_s == 2.5
    assert settings.deep_research_clients == ["acme-*", "other"]
    monkeypatch.setenv("KNOWLEDGE_MCP_DEEP_RESEARCH_CLIENTS", '["a", "b*"]')
    assert load_settings().deep_research_clients == ["a", "b*"]
