"""MCP tools of the chats source."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from ..models import Retrieval
from ..tooling import (
    AnchorLoc,
    AnchorQuery,
    Limit,
    Mode,
    Offset,
    Query,
    Rerank,
    SnippetLength,
    ToolHost,
    add_read_tool,
    databases_of,
    item_id_of,
    render_search,
    reranking_of,
    tool_result,
)
from ..wire import GetOutput, SearchOutput
from .models import render_get
from .source import MAX_PAGE_SIZE, ChatsOptions, SearchBy, source

By = Annotated[SearchBy, Field(description="both (default): title or messages; title; message.")]
CharacterId = Annotated[
    str | None, Field(description="Only chats played with this character card (a characters_search id).")
]
Sender = Annotated[
    str | None, Field(description="Only messages by this sender name or role (user, assistant, system).")
]
ConversationId = Annotated[
    str, item_id_of("chats"), Field(description="A chats_search result's uri or conversation_id.")
]
Page = Annotated[int, Field(ge=1, description="Page of messages, from 1 (page mode).")]
PageSize = Annotated[int, Field(ge=1, le=MAX_PAGE_SIZE, description="Messages per page, 1..200.")]
GetRetrieval = Annotated[
    Retrieval | None, Field(description="Omit for a page of messages; or a budgeted mode around loc.")
]


def register(mcp: MCPServer, host: ToolHost) -> None:
    async def chats_search(
        query: Query,
        ctx: Context,
        by: By = "both",
        character_id: CharacterId = None,
        sender: Sender = None,
        limit: Limit = 10,
        offset: Offset = 0,
        snippet_length: SnippetLength = None,
        mode: Mode = "auto",
        rerank: Rerank = False,
    ) -> Annotated[CallToolResult, SearchOutput]:
        """Search the user's chat history (ChatGPT and Claude exports, SillyTavern chats).

        One result per conversation: the best-matching message's snippet, sender, role and loc;
        match_count says how many messages matched. Read around it with chats_get(conversation_id=uri,
        loc=loc, retrieval={mode: chunk_with_siblings, max_tokens: N}).
        """
        databases = databases_of(host, ctx)
        options = ChatsOptions(by=by, character_id=character_id, sender=sender)
        request = await source.search_request(
            query,
            options,
            limit=limit,
            offset=offset,
            snippet_length=snippet_length,
            databases=databases,
            mode=mode,
        )
        request.rerank = reranking_of(host, ctx, rerank)
        db = await host.database(ctx, source.name)
        response = await source.search(db, request, host.defaults(ctx))
        await source.complete(response.results, databases)
        return tool_result(response, render_search(response))

    async def chats_get(
        conversation_id: ConversationId,
        ctx: Context,
        page: Page = 1,
        page_size: PageSize = 50,
        loc: AnchorLoc = None,
        query: AnchorQuery = None,
        retrieval: GetRetrieval = None,
    ) -> Annotated[CallToolResult, GetOutput]:
        """Read a conversation's messages (message_index, role, sender, timestamp, text).

        Without retrieval: page `page` of `page_size` messages. With it: the message at loc (else
        the best match of `query`) and its neighbours within max_tokens. Follow `next` to read on.
        """
        db = await host.database(ctx, source.name)
        response = await source.get(
            db,
            conversation_id,
            loc=loc,
            query=query,
            retrieval=retrieval,
            defaults=host.defaults(ctx),
            page=page,
            page_size=page_size,
            databases=databases_of(host, ctx),
        )
        return tool_result(response, render_get(response))

    add_read_tool(mcp, host, "chats_search", "Search chats", chats_search)
    add_read_tool(mcp, host, "chats_get", "Read a conversation", chats_get)
