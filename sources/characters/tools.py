"""MCP tools of the characters source."""

from __future__ import annotations

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
    ToolHost,
    add_read_tool,
    item_id_of,
    reranking_of,
    tool_result,
)
from ..wire import GetOutput, SearchOutput, render_get, render_search
from .source import source

CharacterId = Annotated[
    str, item_id_of("characters"), Field(description="A characters_search result's uri or id.")
]


def register(mcp: MCPServer, host: ToolHost) -> None:
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
        request.rerank = reranking_of(host, ctx, rerank)
        db = await host.database(ctx, source.name)
        response = await source.search(db, request, host.defaults(ctx))
        return tool_result(response, render_search(response))

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
        db = await host.database(ctx, source.name)
        response = await source.get(
            db, character_id, loc=loc, query=query, retrieval=retrieval, defaults=host.defaults(ctx)
        )
        return tool_result(response, render_get(response))

    add_read_tool(mcp, host, "characters_search", "Search character cards", characters_search)
    add_read_tool(mcp, host, "characters_get", "Read a character card", characters_get)
