"""MCP tools of the characters source."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field, WithJsonSchema

from ..models import Loc
from ..search.request import SearchRequest
from ..tooling import (
    AnchorQuery,
    GetRetrieval,
    Limit,
    Mode,
    Offset,
    Query,
    Rerank,
    SnippetLength,
    Tool,
    add_tools,
    get_result,
    item_id_of,
    search_result,
)
from ..wire import GetOutput, SearchOutput
from .source import source

CharacterId = Annotated[
    str, item_id_of("characters"), Field(description="A characters_search result's uri or id.")
]


async def characters_search(
    query: Query,
    ctx: Context,
    limit: Limit = 10,
    offset: Offset = 0,
    snippet_length: SnippetLength = None,
    mode: Mode = "auto",
    rerank: Rerank = False,
) -> Annotated[CallToolResult, SearchOutput]:
    """Search the user's roleplay character cards (V1/V2/V3, SillyTavern), the name weighted highest.

    One result per card: title is the name, with creator, tags and summary; loc names the
    matching field. Read one with characters_get(character_id=uri).
    """
    request = SearchRequest(query, limit, offset, snippet_length, mode=mode)
    return await search_result(source, request, rerank)


async def characters_get(
    character_id: CharacterId,
    ctx: Context,
    loc: Annotated[
        Loc | None,
        WithJsonSchema({"type": "object"}),
        Field(description="A search result's `loc`, or {field: 'scenario'}."),
    ] = None,
    query: AnchorQuery = None,
    retrieval: GetRetrieval = None,
) -> Annotated[CallToolResult, GetOutput]:
    """Read a character card as its fields under headings, within max_tokens (default mode full).

    loc.field picks a field: description, personality, scenario, first_mes, mes_example,
    alternate_greetings, system_prompt, post_history_instructions, creator_notes,
    character_book, nickname, creator or tags. Follow `next` to read on.
    """
    return await get_result(source, character_id, loc, query, retrieval)


TOOLS = (
    Tool("characters_search", "Search character cards", characters_search),
    Tool("characters_get", "Read a character card", characters_get),
)


def register(mcp: MCPServer, rename: Callable[[str], str]) -> None:
    add_tools(mcp, TOOLS, rename)
