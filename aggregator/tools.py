"""MCP tools of the aggregator: knowledge_search and knowledge_get."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from knowledge_mcp.sources.chats.models import ChatGetResponse
from knowledge_mcp.sources.chats.tools import render_get as render_chat
from knowledge_mcp.sources.models import OrderBy, SourceName
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.tooling import (
    AnchorLoc,
    AnchorQuery,
    GetRetrieval,
    Limit,
    Mode,
    Offset,
    SnippetLength,
    add_read_tool,
    render_get,
    render_search,
    tool_result,
)

from .host import AggregatorHost
from .merge import SeenMode
from .models import KnowledgeGetResponse, KnowledgeSearchResponse
from .routing import routed_get
from .search import DEFAULT_LIMIT, KnowledgeQuery, knowledge_search

SessionId = Annotated[
    str | None,
    Field(description="Your own session key (e.g. research-42); default: this connection's session."),
]


def filter_help() -> str:
    parts = [f"{name}: {{{', '.join(src.options_model.model_fields)}}}" for name, src in SOURCES.items()]
    return "Per-source filters, e.g. {media: {media_types: [email]}}. " + "; ".join(
        p for p in parts if not p.endswith("{}")
    )


def register(mcp: MCPServer, host: AggregatorHost, *, source_timeout_s: float = 5.0) -> None:
    async def knowledge_search_tool(
        query: Annotated[str, Field(description='Plain words; "quoted phrase"; trailing * for a prefix.')],
        ctx: Context,
        sources: Annotated[
            list[SourceName] | None, Field(description="Search only these sources (default: all).")
        ] = None,
        limit: Limit = DEFAULT_LIMIT,
        offset: Offset = 0,
        snippet_length: SnippetLength = None,
        order_by: Annotated[OrderBy | None, Field(description="relevance (default) or recent.")] = None,
        filters: Annotated[dict[str, dict[str, Any]] | None, Field(description=filter_help())] = None,
        min_score: Annotated[
            float | None, Field(ge=0.0, le=1.0, description="Drop results scoring below this (0..1).")
        ] = None,
        seen: Annotated[
            SeenMode,
            Field(description="Results this session already returned: hide (default), downrank or show."),
        ] = "hide",
        session_id: SessionId = None,
        mode: Mode = "auto",
    ) -> Annotated[CallToolResult, KnowledgeSearchResponse]:
        """Search all of the user's knowledge at once: notes, media (documents, PDFs, web pages,
        transcripts, emails), chats, character cards and saved prompts, in one ranked list.

        Query syntax: plain words match with stemming and are ranked by relevance; "quoted
        words" must appear as a phrase; a trailing * matches a prefix. Scores are 0..1 and
        comparable across sources (about: how likely the hit is relevant), so min_score drops
        weak hits everywhere. Each result has `uri` (notes://…, media://…), `source`, title,
        snippet, score, matched terms, `loc` and its source's own fields (email from/subject,
        chat sender, prompt author…). In a session, results already returned are hidden by
        default (seen=hide), so asking again brings new items. Next: knowledge_get(uri=…,
        loc=…) to read a hit, with retrieval = {mode: chunk_with_siblings, max_tokens: N}.
        Page with offset = next_offset while has_more is true. If a source fails, the others
        still answer and `degraded`/`provider_hint` name it.
        """
        q = KnowledgeQuery(
            query,
            sources,
            limit,
            offset,
            snippet_length,
            order_by,
            filters,
            min_score,
            seen,
            session_id,
            mode,
        )
        response = await knowledge_search(host, ctx, q, timeout_s=source_timeout_s)
        return tool_result(response, render_search(response))

    async def knowledge_get_tool(
        ctx: Context,
        uri: Annotated[
            str | None, Field(description="The `uri` of a knowledge_search result, e.g. notes://<id>.")
        ] = None,
        source: Annotated[SourceName | None, Field(description="Instead of uri: the source…")] = None,
        id: Annotated[str | None, Field(description="…and the item's id in it.")] = None,
        loc: AnchorLoc = None,
        query: AnchorQuery = None,
        retrieval: GetRetrieval = None,
        session_id: SessionId = None,
    ) -> Annotated[CallToolResult, KnowledgeGetResponse]:
        """Read one item of any source by its uri (notes://, media://, chats://, characters://,
        prompts://), as much as a token budget allows; the item counts as viewed in the session.

        retrieval.mode: snippet (default; a short excerpt), chunk (the chunk at loc),
        chunk_with_siblings (that chunk plus neighbours while within max_tokens), full (the
        whole item, paged: follow `next`), auto (chunk_with_siblings if max_tokens is given).
        Without loc, the anchor is the best match of `query`, else the start. `meta` carries
        the item's fields; chats return their messages as structured content. The response's
        `next` says how to continue reading (call knowledge_get again with it).
        """
        response = await routed_get(
            host,
            ctx,
            uri,
            source=source,
            item_id=id,
            loc=loc,
            query=query,
            retrieval=retrieval,
            session_id=session_id,
        )
        text = render_chat(response) if isinstance(response, ChatGetResponse) else render_get(response)
        return tool_result(response, text)

    add_read_tool(mcp, host, "knowledge_search", "Search all knowledge", knowledge_search_tool)
    add_read_tool(mcp, host, "knowledge_get", "Read any item", knowledge_get_tool)
