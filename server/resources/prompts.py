"""The caller's prompt library as MCP prompts: `prompts/list` and `prompts/get`, per caller.

Nothing is registered at start-up: each call reads the caller's own prompts database
(`sources/prompts/library.py`), so a host's prompt picker shows that person's imported prompts,
and another user's prompt is an unknown name. An unknown name, or a required argument left out,
is invalid params (-32602) in one sentence (`protocol_errors.py`). The list is paged
(`PAGE_SIZE` a page, `nextCursor`).
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    PaginatedRequestParams,
    Prompt,
    PromptArgument,
    PromptMessage,
    TextContent,
)

from knowledge_mcp.sources.prompts.library import LibraryPrompt, find, library
from knowledge_mcp.sources.prompts.placeholders import missing
from knowledge_mcp.sources.tooling import current_call

from ..protocol_errors import missing_arguments, unknown_prompt

PAGE_SIZE = 100


def listed(prompt: LibraryPrompt) -> Prompt:
    return Prompt(
        name=prompt.name,
        title=prompt.title,
        description=prompt.description,
        arguments=[
            PromptArgument(name=a.name, description=a.description, required=a.required)
            for a in prompt.arguments
        ],
    )


def rendered(prompt: LibraryPrompt, given: dict[str, str], max_chars: int) -> GetPromptResult:
    """The prompt's messages, or invalid params when an argument is missing or the messages
    would be longer than `max_chars` (`resource_max_chars`; a prompt's own longer text is
    allowed as it is): counted before rendering, so a long value in many placeholders is
    refused without being copied."""
    lacking = missing(prompt.arguments, given)
    if lacking:
        raise missing_arguments(prompt.name, lacking)
    allowed = max(max_chars, sum(map(len, prompt.bodies())))
    length = prompt.rendered_length(given)
    if length > allowed:
        raise MCPError(
            INVALID_PARAMS,
            f"arguments: prompt {prompt.name!r} would be {length:,} characters with these arguments, "
            f"more than the {allowed:,} allowed; pass shorter ones",
        )
    messages = [
        PromptMessage(role="user", content=TextContent(type="text", text=text))
        for text in prompt.messages(given)
    ]
    return GetPromptResult(description=prompt.description, messages=messages)


def page_start(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise MCPError(INVALID_PARAMS, "cursor: pass the nextCursor of the previous prompts/list")
    return int(cursor)


def register(lowlevel: Server[Any], max_chars: int) -> None:
    """Answer `prompts/list` and `prompts/get` from the caller's prompt library (a rendered
    prompt at most `max_chars` characters)."""

    async def caller_library() -> list[LibraryPrompt]:
        return await library(await current_call().database("prompts"))

    async def list_prompts(
        ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListPromptsResult:
        start = page_start(params.cursor if params is not None else None)
        prompts = await caller_library()
        page = prompts[start : start + PAGE_SIZE]
        after = start + PAGE_SIZE
        cursor = str(after) if after < len(prompts) else None
        return ListPromptsResult(prompts=[listed(p) for p in page], next_cursor=cursor)

    async def get_prompt(
        ctx: ServerRequestContext[Any, Any], params: GetPromptRequestParams
    ) -> GetPromptResult:
        prompts = await caller_library()
        prompt = find(prompts, params.name)
        if prompt is None:
            raise unknown_prompt(params.name, [p.name for p in prompts])
        return rendered(prompt, dict(params.arguments or {}), max_chars)

    lowlevel.add_request_handler("prompts/list", PaginatedRequestParams, list_prompts)
    lowlevel.add_request_handler("prompts/get", GetPromptRequestParams, get_prompt)
