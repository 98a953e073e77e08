"""One short session with an installed server over stdio, as a host would hold it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp import Client, StdioServerParameters
from mcp_types import TextContent


@dataclass(frozen=True)
class Session:
    tools: list[str]
    hits: list[dict[str, Any]]
    text: str
    """The text of a notes_get of the first hit: its chunk that matches the query."""


async def search_and_get(params: StdioServerParameters, query: str) -> Session:
    """List the tools, search the notes for `query`, and read the best hit by its uri."""
    async with Client(params) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        found = await client.call_tool("notes_search", {"query": query, "limit": 3})
        assert not found.is_error, found.content
        hits = list((found.structured_content or {}).get("results", []))
        text = ""
        if hits:
            args = {"note_id": hits[0]["uri"], "query": query, "retrieval": {"mode": "chunk"}}
            got = await client.call_tool("notes_get", args)
            assert not got.is_error, got.content
            text = "\n".join(b.text for b in got.content if isinstance(b, TextContent))
    return Session(tools, hits, text)
