"""MCP tools of the notes source."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ToolAnnotations
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
    reranking_of,
    tool_errors,
    tool_result,
)
from ..wire import GetOutput, SearchOutput, render_get, render_search
from .rendering import render_write
from .source import NotesOptions, source
from .writing import NoteWriter, WritingHost

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
    if isinstance(host, WritingHost):
        register_writes(mcp, host)


CREATES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
CHANGES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
Text = str | None


def register_writes(mcp: MCPServer, host: WritingHost) -> None:
    """notes_create and notes_update (listed only to callers who may write: `server/tool_list`)."""

    async def writer(ctx: Context) -> NoteWriter:
        permit = host.write_permit(ctx)
        return NoteWriter(await host.database(ctx, source.name), permit, host.defaults(ctx))

    async def notes_create(
        title: str,
        content: str,
        ctx: Context,
        tags: list[str] | None = None,
        folder: Annotated[str | None, Field(description="Sub-folder, e.g. projects/x.")] = None,
    ) -> CallToolResult:
        """Save a new Markdown note in the user's notes folder.

        Similar notes come back as duplicates; recommendation review_first: one is near-identical.
        """
        result = await (await writer(ctx)).create(title, content, tags, folder)
        await host.items_changed(ctx, source.name, added=(result.uri,))
        return tool_result(result, render_write(result))

    async def notes_update(
        note_id: NoteId,
        ctx: Context,
        content: Annotated[Text, Field(description="New body (or new section text).")] = None,
        append: Annotated[Text, Field(description="Text to add at the end.")] = None,
        section: Annotated[str | None, Field(description="Heading whose text content replaces.")] = None,
        expected_version: int | None = None,
    ) -> CallToolResult:
        """Change a note: replace its body or one section, or append.

        expected_version (notes_get's version) refuses the change if the note changed since.
        """
        result = await (await writer(ctx)).update(
            note_id, content=content, append=append, section=section, expected_version=expected_version
        )
        await host.items_changed(ctx, source.name, updated=(result.uri,))
        return tool_result(result, render_write(result))

    for fn, title, hints in (
        (notes_create, "Create a note", CREATES),
        (notes_update, "Update a note", CHANGES),
    ):
        tool = tool_errors(fn, source.name)
        mcp.add_tool(tool, name=host.tool_name(fn.__name__), title=title, annotations=hints)
