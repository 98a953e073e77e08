"""MCP tools of the prompts source."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from ..models import GetResponse, Loc, SearchResponse
from ..tooling import (
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
from .models import PromptField, PromptResult
from .source import PromptsOptions, source

Fields = Annotated[
    list[PromptField] | None,
    Field(description="Match only in these fields (default: all, the name weighted highest)."),
]
PromptIdOrName = Annotated[
    str, Field(description="The `id` of a prompts_search result, or the prompt's exact name (any case).")
]
AnchorLoc = Annotated[
    Loc | None,
    Field(description="The `loc` of a search result, or {field: 'system_prompt'} to read a field."),
]


def register(mcp: MCPServer, host: ToolHost) -> None:
    async def prompts_search(
        query: Query,
        ctx: Context,
        fields: Fields = None,
        limit: Limit = 10,
        offset: Offset = 0,
        snippet_length: SnippetLength = None,
        mode: Mode = "auto",
    ) -> Annotated[CallToolResult, SearchResponse[PromptResult]]:
        """Search the user's saved LLM prompts (system and user prompt templates) by full text.

        Fields searched: name (weighted highest), author, details (what the prompt is for),
        system_prompt, user_prompt and keywords; `fields` restricts matching to some of them
        (e.g. ["system_prompt"] finds prompts whose instructions say something, ignoring their
        names). Query syntax: plain words match with stemming and are ranked by relevance;
        "quoted words" must appear as a phrase; a trailing * matches a prefix. One result per
        prompt: `title` is its name, plus author, keywords, `summary` (the start of its
        details, else its prompt), a 0..1 score, matched terms, a snippet from the
        best-matching field (from the details when only the name matched) and `loc = {field,
        approx_offset}` naming it. Next: prompts_get with the result's `id` (or the prompt's
        name) to read the whole prompt, or loc + retrieval.mode = chunk for that one field.
        Page with offset = next_offset while has_more is true.
        """
        request = await source.search_request(
            query,
            PromptsOptions(fields=fields),
            limit=limit,
            offset=offset,
            snippet_length=snippet_length,
            mode=mode,
        )
        db = await host.database(ctx, source.name)
        response = await source.search(db, request, host.defaults(ctx))
        return tool_result(response, render_search(response))

    async def prompts_get(
        prompt_id_or_name: PromptIdOrName,
        ctx: Context,
        loc: AnchorLoc = None,
        query: AnchorQuery = None,
        retrieval: GetRetrieval = None,
    ) -> Annotated[CallToolResult, GetResponse[PromptResult]]:
        """Read one saved prompt by id or exact name, as much as a token budget allows.

        The prompt reads as its fields under headings (## Name, ## Author, ## Details,
        ## System prompt, ## User prompt, ## Keywords); template placeholders such as
        {{topic}} are kept as written. loc.field picks a field (name, author, details,
        system_prompt, user_prompt, keywords). retrieval.mode: full (the default: the prompt
        from the start, or from loc, within max_tokens, default 4000; when `truncated`, follow
        `next`), snippet, chunk (that field), chunk_with_siblings (the field and its
        neighbours within max_tokens), auto. In modes other than full, without loc the anchor
        is the best match of `query`, else the start.
        """
        db = await host.database(ctx, source.name)
        response = await source.get(
            db, prompt_id_or_name, loc=loc, query=query, retrieval=retrieval, defaults=host.defaults(ctx)
        )
        return tool_result(response, render_get(response))

    add_read_tool(mcp, host, "prompts_search", "Search saved prompts", prompts_search)
    add_read_tool(mcp, host, "prompts_get", "Read a saved prompt", prompts_get)
