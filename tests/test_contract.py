"""The contract every source keeps (DESIGN §4–§7), checked for each registered source.

Parametrized over `sources.registry.SOURCES`, so a new source is covered as soon as it is
registered and has a fixture folder `fixtures/<name>/`.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.db import database_path
from tests.budgets import needed_budget, within_budget
from tests.conftest import FIXTURES, import_into, item_id

pytestmark = pytest.mark.anyio

SNIPPET_LENGTH = 120
JUNK_QUERIES = [
    '"unbalanced',
    "NEAR(a b",
    "AND OR NOT",
    "*",
    "col:val ^start",
    "(((",
    "a - - b",
    '"" ""',
    "x*y*",
    "title:",
    "-",
    "^",
]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data dir with every source's fixture folder imported once (the tests only read it)."""
    data_dir = tmp_path_factory.mktemp("contract") / "data"
    for name in SOURCES:
        folder = FIXTURES / name
        assert folder.is_dir(), f"every source needs a fixture folder: {folder}"
        summary = anyio.run(import_into, data_dir, name, folder)
        assert summary.added > 0 and summary.files_failed == 0, (name, summary.failures)
    return data_dir


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module scope, so one server (and its database pool) serves every test here."""
    return "asyncio"


@pytest.fixture(scope="module")
async def server(imported: Path) -> Any:
    mcp, host = build_server(Settings(data_dir=imported))
    try:
        yield mcp
    finally:
        await host.pool.close()


@pytest.fixture(params=sorted(SOURCES))
async def world(request: pytest.FixtureRequest, imported: Path, server: Any) -> Any:
    """A client, and the source's first imported item's id and title."""
    name = str(request.param)
    conn = sqlite3.connect(database_path(imported, "local", name))
    try:
        first = f"SELECT item_id, title FROM {name}_items ORDER BY id LIMIT 1"
        item_id, title = conn.execute(first).fetchone()
    finally:
        conn.close()
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        yield {
            "name": name,
            "client": client,
            "tools": tools,
            "folder": FIXTURES / name,
            "item_id": item_id,
            "title": title,
            "data_dir": imported,
        }


def title_word(title: str) -> str:
    words = re.findall(r"[^\W\d_]{3,}", title)
    assert words, f"no searchable word in the title {title!r}"
    return max(words, key=len)


def id_parameter(tool: Any) -> str:
    """The get tool's id parameter: its first required string property."""
    schema = tool.input_schema
    for name in schema.get("required", []):
        if schema["properties"][name].get("type") == "string":
            return str(name)
    raise AssertionError(f"{tool.name} has no required string parameter")


def is_aware_iso(stamp: str) -> bool:
    return datetime.fromisoformat(stamp).tzinfo is not None


async def call(world: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await world["client"].call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    assert result.structured_content is not None
    return dict(result.structured_content)


async def top_hit(world: Any) -> dict[str, Any]:
    response = await call(world, f"{world['name']}_search", {"query": title_word(world["title"])})
    assert response["results"]
    return dict(response["results"][0])


async def test_search_for_a_title_word_returns_results_keeping_the_result_contract(world: Any) -> None:
    name = world["name"]
    response = await call(
        world, f"{name}_search", {"query": title_word(world["title"]), "snippet_length": SNIPPET_LENGTH}
    )
    results = response["results"]
    assert len(results) >= 1
    assert world["item_id"] in [item_id(r) for r in results]
    assert response["count"] == len(results)
    param = id_parameter(world["tools"][f"{name}_get"])
    for r in results:
        assert item_id(r)
        assert r["uri"] == f"{name}://{item_id(r)}"
        assert not {"id", "source", "rank", "created_at"} & set(r), r  # the uri and the order say them
        assert 0 <= r["score"] <= 1
        assert len(r["snippet"]) <= SNIPPET_LENGTH
        assert is_aware_iso(r["last_modified"]), r["last_modified"]
        assert r.get("loc"), r
        # created_at lives in the get tool's meta (there only when it differs from last_modified)
        meta = (await call(world, f"{name}_get", {param: r["uri"]}))["meta"]
        assert meta["uri"].startswith(f"{name}://") and "source" not in meta  # the scheme says it
        assert is_aware_iso(meta.get("created_at", meta["last_modified"])), meta
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    assert response["top_score"] == scores[0]


async def test_search_and_get_tools_are_read_only_with_an_output_schema(world: Any) -> None:
    for kind in ("search", "get"):
        tool = world["tools"][f"{world['name']}_{kind}"]
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.output_schema and "properties" in tool.output_schema
        assert tool.title


@pytest.mark.parametrize("mode", ["chunk", "chunk_with_siblings", "full"])
@pytest.mark.parametrize("max_tokens", [50, 300, 1000])
async def test_get_returns_the_hit_within_the_token_budget(world: Any, mode: str, max_tokens: int) -> None:
    name = world["name"]
    top = await top_hit(world)
    param = id_parameter(world["tools"][f"{name}_get"])
    for loc in (top["loc"], None):
        args: dict[str, Any] = {param: item_id(top), "retrieval": {"mode": mode, "max_tokens": max_tokens}}
        if loc is not None:
            args["loc"] = loc
        got = within_budget(await world["client"].call_tool(f"{name}_get", args), max_tokens)
        needed = needed_budget(got, max_tokens)
        if needed is not None:  # too small for content: the handle (or a refusal) names a budget
            assert max_tokens == 50, got
            args["retrieval"]["max_tokens"] = needed
            got = within_budget(await world["client"].call_tool(f"{name}_get", args), needed)
        assert got["meta"]["uri"] == top["uri"]
        assert got["mode_used"] == mode
        assert got["content"]


async def test_unknown_id_is_a_tool_error_naming_the_id_parameter(world: Any) -> None:
    name = world["name"]
    param = id_parameter(world["tools"][f"{name}_get"])
    result = await world["client"].call_tool(f"{name}_get", {param: "no-such-item-0000"})
    assert result.is_error
    assert param in result.content[0].text


@pytest.mark.parametrize("limit", [0, 1000])
async def test_out_of_range_limit_is_a_tool_error_naming_limit(world: Any, limit: int) -> None:
    name = world["name"]
    args = {"query": title_word(world["title"]), "limit": limit}
    result = await world["client"].call_tool(f"{name}_search", args)
    assert result.is_error
    assert "limit" in result.content[0].text
    assert (await top_hit(world))["uri"]  # the server keeps serving


async def test_fts_syntax_in_the_query_never_errors(world: Any) -> None:
    for query in JUNK_QUERIES:
        result = await world["client"].call_tool(f"{world['name']}_search", {"query": query})
        assert not result.is_error, (query, result.content[0].text)
        assert isinstance(result.structured_content["results"], list)


async def test_reimporting_the_fixture_folder_adds_and_updates_nothing(world: Any) -> None:
    again = await import_into(world["data_dir"], world["name"], world["folder"])
    assert (again.added, again.updated, again.files_failed) == (0, 0, 0)
    assert again.unchanged > 0
