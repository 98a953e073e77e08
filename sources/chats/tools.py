"""MCP tools of the chats source."""

from __future__ import annotations

from collections.abc import Callable
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
    Tool,
    add_tools,
    current_call,
    item_id_of,
    tool_result,
)
from ..wire import GetOutput, SearchOutput, render_search
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
    call = current_call()
    databases = call.database
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
    request.rerank = call.reranking(rerank)
    response = await source.search(await call.database(source.name), request, call.defaults())
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
    call = current_call()
    db = await call.database(source.name)
    response = await source.get(
        db,
        conversation_id,
        loc=loc,
        query=query,
        retrieval=retrieval,
        defaults=call.defaults(),
        page=page,
        page_size=page_size,
        databases=call.database,
    )
    return tool_result(response, render_get(response))


TOOLS = (
    Tool("chats_search", "Search chats", chats_search),
    Tool("chats_get", "Read a conversation", chats_get),
)


def register(mcp: MCPServer, rename: Callable[[str], str]) -> None:
    add_tools(mcp, TOOLS, rename)
