"""MCP tools of the aggregator: knowledge_search and knowledge_get."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from knowledge_mcp.sources.models import OrderBy
from knowledge_mcp.sources.registry import SOURCES, SourceChoice
from knowledge_mcp.sources.tooling import (
    AnchorLoc,
    AnchorQuery,
    Expand,
    GetRetrieval,
    Limit,
    Mode,
    Offset,
    PerItem,
    Rerank,
    ResultFields,
    SnippetLength,
    Tool,
    add_tools,
    tool_result,
)
from knowledge_mcp.sources.wire import GetOutput, SearchOutput

from .calls import current_call
from .merging.merge import SeenMode
from .rendering import render_knowledge_get, render_knowledge_search
from .routing import routed_get
from .search import DEFAULT_LIMIT, KnowledgeQuery, knowledge_search

SessionId = Annotated[
    str | None,
    Field(description="Your own session key; default: this connection's."),
]


def filter_help() -> str:
    parts = [f"{name}: {{{', '.join(src.options_model.model_fields)}}}" for name, src in SOURCES.items()]
    return "Per-source filters, e.g. {media: {media_types: [email]}}. " + "; ".join(
        p for p in parts if not p.endswith("{}")
    )


async def knowledge_search_tool(
    query: Annotated[str, Field(description='Plain words; "quoted phrase"; trailing * for a prefix.')],
    ctx: Context,
    sources: Annotated[
        list[SourceChoice] | None, Field(description="Search only these sources (default: all).")
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
        Field(
            description="Results this session already returned: downrank (default: score halved), "
            "hide, or show."
        ),
    ] = "downrank",
    session_id: SessionId = None,
    mode: Mode = "auto",
    rerank: Rerank = False,
    expand: Expand = True,
    per_item: PerItem = 1,
    fields: ResultFields = None,
) -> Annotated[CallToolResult, SearchOutput]:
    """Search all of the user's knowledge in one ranked list: notes, media (documents, web pages,
    transcripts, emails), chats, character cards and prompts.

    Scores are 0..1 and comparable across sources. Each result keeps its source's fields.
    Results this session already returned rank at half their score (seen=downrank; hide
    drops them, show ignores the session); `seen_applied` names them. Read one with
    knowledge_get(uri=uri, loc=loc, retrieval={mode: chunk_with_siblings, max_tokens: N}).
    If a source fails, the others answer and `degraded` names it. rerank=true reorders the
    top hits with the configured cross-encoder, else the client's model (sampling).
    """
    call = current_call()
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
        call.reranking(rerank),
        expand,
        per_item,
        fields,
    )
    response = await knowledge_search(call, q, timeout_s=call.source_timeout_s)
    return tool_result(response, render_knowledge_search(response))


async def knowledge_get_tool(
    ctx: Context,
    uri: Annotated[str | None, Field(description="A search result's uri, e.g. notes://<id>.")] = None,
    source: Annotated[SourceChoice | None, Field(description="Instead of uri: the source and…")] = None,
    id: Annotated[str | None, Field(description="…the item's id.")] = None,
    loc: AnchorLoc = None,
    query: AnchorQuery = None,
    retrieval: GetRetrieval = None,
    session_id: SessionId = None,
) -> Annotated[CallToolResult, GetOutput]:
    """Read one item of any source by its uri, within a token budget (`retrieval`).

    Anchors on loc, else the best match of `query`, else the start; follow `next` to read on.
    Chats return their messages as structured content.
    """
    response = await routed_get(
        current_call(),
        uri,
        source=source,
        item_id=id,
        loc=loc,
        query=query,
        retrieval=retrieval,
        session_id=session_id,
    )
    return tool_result(response, render_knowledge_get(response))


TOOLS = (
    Tool("knowledge_search", "Search all knowledge", knowledge_search_tool),
    Tool("knowledge_get", "Read any item", knowledge_get_tool),
)


def register(mcp: MCPServer, rename: Callable[[str], str]) -> None:
    add_tools(mcp, TOOLS, rename)
