"""MCP tools of the notes source."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from ..models import GetResponse, NoteResult, OrderBy, SearchResponse
from ..tooling import (
    AnchorLoc,
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
from .source import NotesOptions, source


def register(mcp: MCPServer, host: ToolHost) -> None:
    async def notes_search(
        query: Query,
        ctx: Context,
        keywords: Annotated[
            list[str] | None, Field(description="Only notes tagged with any of these.")
        ] = None,
        limit: Limit = 10,
        offset: Offset = 0,
        snippet_length: SnippetLength = None,
        order_by: Annotated[OrderBy | None, Field(description="relevance (default) or recent.")] = None,
        mode: Mode = "auto",
    ) -> Annotated[CallToolResult, SearchResponse[NoteResult]]:
        """Search the user's personal notes (Markdown/text files, e.g. an Obsidian vault) by full text.

        Query syntax: plain words are matched with stemming (running ~ runs) and ranked by
        relevance; "quoted words" must appear as a phrase; a trailing * matches a prefix.
        Each result has a 0..1 score, the matched terms, a snippet around the first match, the
        note's tags and headings, and a `loc`. To read more, call notes_get with the result's
        `id` as note_id and its `loc` (retrieval.mode = chunk_with_siblings and a max_tokens
        budget reads around the hit). Page with offset = next_offset while has_more is true.
        """
        request = await source.search_request(
            query,
            NotesOptions(keywords=keywords),
            limit=limit,
            offset=offset,
            snippet_length=snippet_length,
            order_by=order_by,
            mode=mode,
        )
        db = await host.database(ctx, source.name)
        response = await source.search(db, request, host.defaults(ctx))
        return tool_result(response, render_search(response))

    async def notes_get(
        note_id: Annotated[str, Field(description="The `id` of a notes_search result.")],
        ctx: Context,
        loc: AnchorLoc = None,
        query: AnchorQuery = None,
        retrieval: GetRetrieval = None,
    ) -> Annotated[CallToolResult, GetResponse[NoteResult]]:
        """Read one note, as much as a token budget allows.

        retrieval.mode: snippet (default; a short excerpt), chunk (the ~500-token chunk at
        loc), chunk_with_siblings (that chunk plus neighbours while within max_tokens), full
        (the whole note, paged: follow `next`), auto (chunk_with_siblings if max_tokens is
        given). Without loc, the anchor is the best match of `query`, else the start.
        The response's `next` says how to continue reading.
        """
        db = await host.database(ctx, source.name)
        response = await source.get(
            db, note_id, loc=loc, query=query, retrieval=retrieval, defaults=host.defaults(ctx)
        )
        return tool_result(response, render_get(response))

    add_read_tool(mcp, host, "notes_search", "Search notes", notes_search)
    add_read_tool(mcp, host, "notes_get", "Read a note", notes_get)
