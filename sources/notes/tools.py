"""MCP tools of the notes source."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from ..models import OrderBy
from ..tooling import (
    AnchorLoc,
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
    render_get,
    render_search,
    reranking_of,
    tool_result,
)
from ..wire import GetOutput, SearchOutput
from .source import NotesOptions, source

NoteId = Annotated[str, item_id_of("notes"), Field(description="A notes_search result's uri or id.")]


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
        rerank: Rerank = False,
    ) -> Annotated[CallToolResult, SearchOutput]:
        """Search the user's notes (Markdown/text files, e.g. an Obsidian vault).

        Results carry the note's tags and headings. Read one with notes_get(note_id=uri, loc=loc).
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
        request.rerank = reranking_of(host, ctx, rerank)
        db = await host.database(ctx, source.name)
        response = await source.search(db, request, host.defaults(ctx))
        return tool_result(response, render_search(response))

    async def notes_get(
        note_id: NoteId,
        ctx: Context,
        loc: AnchorLoc = None,
        query: AnchorQuery = None,
        retrieval: GetRetrieval = None,
    ) -> Annotated[CallToolResult, GetOutput]:
        """Read one note within a token budget (`retrieval`).

        Anchors on loc, else the best match of `query`, else the start; follow `next` to read on.
        """
        db = await host.database(ctx, source.name)
        response = await source.get(
            db, note_id, loc=loc, query=query, retrieval=retrieval, defaults=host.defaults(ctx)
        )
        return tool_result(response, render_get(response))

    add_read_tool(mcp, host, "notes_search", "Search notes", notes_search)
    add_read_tool(mcp, host, "notes_get", "Read a note", notes_get)
