"""MCP tools of the notes source."""

from __future__ import annotations

from collections.abc import Callable
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
    Tool,
    add_tools,
    get_result,
    item_id_of,
    search_result,
    tool_result,
)
from ..wire import GetOutput, SearchOutput
from .rendering import render_write
from .source import NotesOptions, source
from .writing import WRITING_CALL, NoteWriter

NoteId = Annotated[str, item_id_of("notes"), Field(description="A notes_search result's uri or id.")]


async def notes_search(
    query: Query,
    ctx: Context,
    keywords: Annotated[list[str] | None, Field(description="Only notes tagged with any of these.")] = None,
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
    return await search_result(source, request, rerank)


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
    return await get_result(source, note_id, loc, query, retrieval)


CREATES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
CHANGES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
Text = str | None


async def writer() -> NoteWriter:
    """The caller's writer: their permit to write (or why not), notes database and defaults."""
    call = WRITING_CALL.get()
    permit = call.write_permit()
    return NoteWriter(await call.note_store(), permit, call.defaults())


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
    result = await (await writer()).create(title, content, tags, folder)
    await WRITING_CALL.get().items_changed(source.name, added=(result.uri,))
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
    result = await (await writer()).update(
        note_id, content=content, append=append, section=section, expected_version=expected_version
    )
    await WRITING_CALL.get().items_changed(source.name, updated=(result.uri,))
    return tool_result(result, render_write(result))


TOOLS = (
    Tool("notes_search", "Search notes", notes_search),
    Tool("notes_get", "Read a note", notes_get),
    # listed only to callers who may write (`server/tool_list`)
    Tool("notes_create", "Create a note", notes_create, CREATES),
    Tool("notes_update", "Update a note", notes_update, CHANGES),
)


def register(mcp: MCPServer, rename: Callable[[str], str]) -> None:
    add_tools(mcp, TOOLS, rename)
