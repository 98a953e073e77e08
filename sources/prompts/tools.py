"""MCP tools of the prompts source."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field, WithJsonSchema

from ..models import Loc
from ..tooling import (
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
)
from ..wire import GetOutput, SearchOutput
from .models import PromptField
from .source import PromptsOptions, source

Fields = Annotated[
    list[PromptField] | None,
    Field(description="Match only in these fields (default: all, the name weighted highest)."),
]
PromptIdOrName = Annotated[
    str,
    item_id_of("prompts"),
    Field(description="A prompts_search result's uri or id, or the prompt's exact name."),
]
AnchorLoc = Annotated[
    Loc | None,
    WithJsonSchema({"type": "object"}),
    Field(description="A search result's `loc`, or {field: 'system_prompt'}."),
]


async def prompts_search(
    query: Query,
    ctx: Context,
    fields: Fields = None,
    limit: Limit = 10,
    offset: Offset = 0,
    snippet_length: SnippetLength = None,
    mode: Mode = "auto",
    rerank: Rerank = False,
) -> Annotated[CallToolResult, SearchOutput]:
    """Search the user's saved LLM prompts (system and user prompt templates).

    Fields: name (weighted highest), author, details, system_prompt, user_prompt, keywords.
    One result per prompt: title is its name, with author, keywords and summary; loc names the
    matching field. Read one with prompts_get.
    """
    request = await source.search_request(
        query,
        PromptsOptions(fields=fields),
        limit=limit,
        offset=offset,
        snippet_length=snippet_length,
        mode=mode,
    )
    return await search_result(source, request, rerank)


async def prompts_get(
    prompt_id_or_name: PromptIdOrName,
    ctx: Context,
    loc: AnchorLoc = None,
    query: AnchorQuery = None,
    retrieval: GetRetrieval = None,
) -> Annotated[CallToolResult, GetOutput]:
    """Read a saved prompt as its fields under headings, within max_tokens (default mode full).

    Placeholders such as {{topic}} are kept. loc.field picks a field: name, author, details,
    system_prompt, user_prompt or keywords. Follow `next` to read on.
    """
    return await get_result(source, prompt_id_or_name, loc, query, retrieval)


TOOLS = (
    Tool("prompts_search", "Search saved prompts", prompts_search),
    Tool("prompts_get", "Read a saved prompt", prompts_get),
)


def register(mcp: MCPServer, rename: Callable[[str], str]) -> None:
    add_tools(mcp, TOOLS, rename)
