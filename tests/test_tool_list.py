"""The tool list a host reads is exactly the recorded one (names, descriptions, input and output
schemas, annotations), in every configuration that changes it.

The golden file `tests/snapshots/tool_list.jsonl` is the wire form of `tools/list`; a refactor
must leave it byte for byte as it is. A change meant to alter the tool list rewrites it with
`KNOWLEDGE_MCP_WRITE_SNAPSHOT=1 make test` and shows the difference in its commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings

pytestmark = pytest.mark.anyio

SNAPSHOT = Path(__file__).parent / "snapshots" / "tool_list.jsonl"
CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "deep_research_always": {"deep_research_aliases": "always"},
    "dotted_names": {"tool_names": "dotted"},
    "compact_profile": {"tool_profile": "compact"},
}


async def _tool_lists(data_dir: Path) -> str:
    lists: dict[str, Any] = {}
    for name, settings in CONFIGURATIONS.items():
        mcp, host = build_server(Settings(data_dir=data_dir, **settings))
        try:
            async with Client(mcp) as client:
                tools = (await client.list_tools()).tools
                lists[name] = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
        finally:
            await host.pool.close()
    # One line per tool: a change shows as the lines of the tools it touches.
    return "".join(
        json.dumps({"configuration": name, "tool": tool}, ensure_ascii=False) + "\n"
        for name, tools in lists.items()
        for tool in tools
    )


async def test_the_tool_list_is_byte_for_byte_the_recorded_one(tmp_path: Path) -> None:
    listed = await _tool_lists(tmp_path / "data")
    if os.environ.get("KNOWLEDGE_MCP_WRITE_SNAPSHOT") == "1":
        SNAPSHOT.write_text(listed, encoding="utf-8")
    recorded = SNAPSHOT.read_text(encoding="utf-8")
    assert {json.loads(line)["configuration"] for line in listed.splitlines()} == CONFIGURATIONS.keys()
    assert listed == recorded, "tools/list changed; see this module's docstring"
