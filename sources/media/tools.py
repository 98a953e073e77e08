"""MCP tools and the `media://types` resource of the media source."""

from __future__ import annotations

import json
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from ..models import GetResponse, OrderBy, SearchResponse, dump
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
from .models import MediaResult, MediaType, TranscriptFormat, TranscriptResponse
from .source import MediaOptions, source

DateBound = Annotated[
    str | None, Field(description="ISO date (2025-06-30) or datetime; compares created_at.")
]
MediaId = Annotated[str, Field(description="The `id` of a media_search result.")]


def register(mcp: MCPServer, host: ToolHost) -> None:
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
    ) -> Annotated[CallToolResult, SearchResponse[MediaResult]]:
        """Search the user's imported media by full text: documents (PDF, Word, EPUB, Markdown,
        text), saved web pages, talk/podcast transcripts and emails.

        Query syntax: plain words match with stemming and are ranked by relevance; "quoted
        words" must appear as a phrase; a trailing * matches a prefix. Filter by media_types
        (email, pdf, html, markdown, txt, transcript, docx, epub) and by date (date_from /
        date_to compare the item's own date: an email's Date, a page's publication date).
        An email is searched by its subject and the sender's own text (quoted replies,
        signatures and attachments are not searched). Each result has a 0..1 score, a snippet,
        `summary`, `media_type` and type-aware fields: emails carry from/to/cc/date/subject/
        thread_id/attachments, documents headings/doc_type/url, PDF hits their `page`,
        transcript hits `start_s`/`end_s`. Read more with media_get(media_id=id, loc=loc);
        for a transcript with timestamps call media_transcript. Page with offset = next_offset.
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
        db = await host.database(ctx, source.name)
        response = await source.search(db, request, host.defaults(ctx))
        return tool_result(response, render_search(response))

    async def media_get(
        media_id: MediaId,
        ctx: Context,
        loc: AnchorLoc = None,
        query: AnchorQuery = None,
        retrieval: GetRetrieval = None,
    ) -> Annotated[CallToolResult, GetResponse[MediaResult]]:
        """Read one media item (document, page, PDF, transcript or email), as much as a token
        budget allows.

        retrieval.mode: snippet (default; a short excerpt), chunk (the ~500-token chunk at
        loc), chunk_with_siblings (that chunk plus neighbours while within max_tokens), full
        (the whole text, paged: follow `next`), auto (chunk_with_siblings if max_tokens is
        given). Without loc, the anchor is the best match of `query`, else the start. `meta`
        has the item's fields; for an email `attachments` lists its files (names and sizes
        only). The response's `next` says how to continue reading.
        """
        db = await host.database(ctx, source.name)
        response = await source.get(
            db, media_id, loc=loc, query=query, retrieval=retrieval, defaults=host.defaults(ctx)
        )
        return tool_result(response, render_get(response))

    async def media_transcript(
        media_id: MediaId,
        ctx: Context,
        format: Annotated[TranscriptFormat, Field(description="text (default), srt, vtt or json.")] = "text",
        include_timestamps: Annotated[
            bool, Field(description="text format: [hh:mm:ss] before each cue.")
        ] = True,
    ) -> Annotated[CallToolResult, TranscriptResponse]:
        """The full transcript of a talk, podcast or video (media_type transcript) with its timing.

        format: text (plain text, one cue a line, `[hh:mm:ss] ` before each when
        include_timestamps, `Speaker: ` when known), srt or vtt (standard subtitle files
        regenerated from the cues), json (a list of {start_s, end_s, text, speaker}).
        Find transcripts with media_search(media_types=["transcript"]); a hit's start_s says
        where in the recording it is. Other media types are an error: read them with media_get.
        """
        db = await host.database(ctx, source.name)
        response = await source.transcript(db, media_id, format, include_timestamps)
        text = (
            response.content if isinstance(response.content, str) else json.dumps(dump(response)["content"])
        )
        return tool_result(response, text)

    add_read_tool(mcp, host, "media_search", "Search media", media_search)
    add_read_tool(mcp, host, "media_get", "Read a media item", media_get)
    add_read_tool(mcp, host, "media_transcript", "Read a transcript", media_transcript)
    register_types_resource(mcp, host)


def register_types_resource(mcp: MCPServer, host: ToolHost) -> None:
    @mcp.resource(
        "media://types",
        name="media_types",
        title="Media types",
        description="The media types present in the user's media library, with item counts (JSON).",
        mime_type="application/json",
    )
    async def media_types_resource() -> str:
        """`media://types`: the media types in the caller's library, with counts (JSON)."""
        db = await host.current_database(source.name)
        return json.dumps(await source.type_counts(db))
