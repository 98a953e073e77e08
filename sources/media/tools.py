"""MCP tools and the `media://types` resource of the media source."""

from __future__ import annotations

import json
from collections.abc import Callable
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
    Tool,
    add_tools,
    current_call,
    get_result,
    item_id_of,
    search_result,
    tool_result,
)
from ..wire import GetOutput, SearchOutput, dump
from .models import MediaType, TranscriptFormat, TranscriptResponse
from .source import MediaOptions, source

DateBound = Annotated[str | None, Field(description="ISO date or datetime; compares the item's own date.")]
MediaId = Annotated[str, item_id_of("media"), Field(description="A media_search result's uri or id.")]


async def media_search(
    query: Query,
    ctx: Context,
    media_types: Annotated[
        list[MediaType] | None, Field(description='Only these kinds, e.g. ["email"] or ["pdf", "html"].')
    ] = None,
    date_from: DateBound = None,
    date_to: DateBound = None,
    order_by: Annotated[OrderBy | None, Field(description="relevance (default) or recent.")] = None,
    limit: Limit = 10,
    offset: Offset = 0,
    snippet_length: SnippetLength = None,
    mode: Mode = "auto",
    rerank: Rerank = False,
) -> Annotated[CallToolResult, SearchOutput]:
    """Search the user's documents (PDF, Word, EPUB, text), web pages, transcripts and emails.

    An email matches on its subject and the sender's own text and carries from, to, date,
    subject, thread_id and attachments; PDF hits carry `page`, transcript hits start_s/end_s.
    Read one with media_get(media_id=uri, loc=loc), a timed transcript with media_transcript.
    """
    options = MediaOptions(media_types=media_types, date_from=date_from, date_to=date_to)
    request = await source.search_request(
        query,
        options,
        limit=limit,
        offset=offset,
        snippet_length=snippet_length,
        order_by=order_by,
        mode=mode,
    )
    return await search_result(source, request, rerank)


async def media_get(
    media_id: MediaId,
    ctx: Context,
    loc: AnchorLoc = None,
    query: AnchorQuery = None,
    retrieval: GetRetrieval = None,
) -> Annotated[CallToolResult, GetOutput]:
    """Read one document, page, transcript or email within a token budget (`retrieval`).

    Anchors on loc, else the best match of `query`, else the start; follow `next` to read on.
    An email's `attachments` lists names and sizes only.
    """
    return await get_result(source, media_id, loc, query, retrieval)


async def media_transcript(
    media_id: MediaId,
    ctx: Context,
    format: Annotated[TranscriptFormat, Field(description="text (default), srt, vtt or json.")] = "text",
    include_timestamps: Annotated[bool, Field(description="text format: [hh:mm:ss] before each cue.")] = True,
) -> Annotated[CallToolResult, TranscriptResponse]:
    """A transcript with its timing, by format.

    text: one cue a line, `[hh:mm:ss]` before each when include_timestamps, `Speaker:` when
    known; srt or vtt: subtitle files; json: [{start_s, end_s, text, speaker}].
    """
    db = await current_call().database(source.name)
    response = await source.transcript(db, media_id, format, include_timestamps)
    text = response.content if isinstance(response.content, str) else json.dumps(dump(response)["content"])
    return tool_result(response, text)


TOOLS = (
    Tool("media_search", "Search media", media_search),
    Tool("media_get", "Read a media item", media_get),
    Tool("media_transcript", "Read a transcript", media_transcript),
)


async def media_types_resource() -> str:
    """`media://types`: the media types in the caller's library, with counts (JSON)."""
    db = await current_call().database(source.name)
    return json.dumps(await source.type_counts(db))


def register(mcp: MCPServer, rename: Callable[[str], str]) -> None:
    """The tools, and the `media://types` resource."""
    add_tools(mcp, TOOLS, rename)
    mcp.resource(
        "media://types",
        name="media_types",
        title="Media types",
        description="The media types present in the user's media library, with item counts (JSON).",
        mime_type="application/json",
    )(media_types_resource)
