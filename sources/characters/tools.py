"""MCP tools of the characters source."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from ..models import GetResponse, Loc, SearchResponse
from ..search.request import SearchRequest
from ..tooling import (
    AnchorQuery,
    GetRetrieval,
    Limit,
    Mode,
    Offset,
    Query,
    SnippetLength,
    ToolHost,
    add_read_tool,
    render_get,
    render_search,
    tool_result,
)
from .models import CharacterResult
from .source import source


def register(mcp: MCPServer, host: ToolHost) -> None:
    async def characters_search(
        query: Query,
        ctx: Context,
        limit: Limit = 10,
        offset: Offset = 0,
        snippet_length: SnippetLength = None,
        mode: Mode = "auto",
    ) -> Annotated[CallToolResult, SearchResponse[CharacterResult]]:
        """Search the user's roleplay character cards (Character Card V1/V2/V3, SillyTavern) by text.

        Every card field is searched: the name (weighted highest), description, personality,
        scenario, first message, example dialogue, alternate greetings, system prompt,
        post-history instructions, creator notes, lorebook entries, nickname, creator and tags.
        Query syntax: plain words match with stemming and are ranked by relevance; "quoted
        words" must appear as a phrase; a trailing * matches a prefix. One result per card:
        `title` is the character's name, plus creator, tags, character_version, nickname,
        `summary` (the start of its description), a 0..1 score, matched terms, a snippet from
        the best-matching field (from the description when only the name matched) and `loc =
        {field, approx_offset}` naming that field. Next: characters_get with the result's `id`
        as character_id to read the card, or with its `loc` and retrieval.mode = chunk for that
        field alone. Page with offset = next_offset while has_more is true.
        """
        request = SearchRequest(query, limit, offset, snippet_length, mode=mode)
        db = await host.database(ctx, source.name)
        response = await source.search(db, request, host.defaults(ctx))
        return tool_result(response, render_search(response))

    async def characters_get(
        character_id: Annotated[str, Field(description="The `id` of a characters_search result.")],
        ctx: Context,
        loc: Annotated[
            Loc | None,
            Field(description="The `loc` of a search result, or {field: 'scenario'} to read a field."),
        ] = None,
        query: AnchorQuery = None,
        retrieval: GetRetrieval = None,
    ) -> Annotated[CallToolResult, GetResponse[CharacterResult]]:
        """Read one character card, as much as a token budget allows.

        The card reads as its fields under headings (Description, Personality, Scenario, First
        message, Example dialogue, Alternate greeting N, System prompt, Creator notes,
        Lorebook entries…). loc.field picks a field (description, personality, scenario,
        first_mes, mes_example, alternate_greetings, group_only_greetings, system_prompt,
        post_history_instructions, creator_notes, character_book, nickname, creator, tags).
        retrieval.mode: full (the default: the card from the start, or from loc, within
        max_tokens, default 4000; when `truncated`, follow `next`), snippet, chunk (that field),
        chunk_with_siblings (the field and its neighbours within max_tokens), auto. In modes
        other than full, without loc the anchor is the best match of `query`, else the start.
        """
        db = await host.database(ctx, source.name)
        response = await source.get(
            db, character_id, loc=loc, query=query, retrieval=retrieval, defaults=host.defaults(ctx)
        )
        return tool_result(response, render_get(response))

    add_read_tool(mcp, host, "characters_search", "Search character cards", characters_search)
    add_read_tool(mcp, host, "characters_get", "Read a character card", characters_get)
