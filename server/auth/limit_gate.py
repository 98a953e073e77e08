"""The server middleware that applies the rate limits of `limits` to `tools/call`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import Any

from loguru import logger
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp_types import CallToolResult, TextContent

from knowledge_mcp.sources.errors import KnowledgeError

from .limits import UNKNOWN_TOOL, RateLimiter, canonical_tool, group_limited_message, limited_message


def rate_limit(
    limiter: RateLimiter,
    user_of: Callable[[ServerRequestContext[Any, Any]], str],
    tool_names: Callable[[], Awaitable[Collection[str]]],
) -> ServerMiddleware[Any]:
    """Server middleware: a `tools/call` over its limit answers a tool error, not a protocol error,
    so the model can read when to retry; the tool does not run."""
    known: list[Collection[str]] = []

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call" or not limiter.enabled:
            return await call_next(ctx)
        name = (ctx.params or {}).get("name")
        try:
            user = user_of(ctx)
        except KnowledgeError:  # no verified user: the tool itself refuses the call
            return await call_next(ctx)
        if not known:
            known.append({canonical_tool(n) for n in await tool_names()})
        tool = canonical_tool(name) if isinstance(name, str) else UNKNOWN_TOOL
        if tool not in known[0]:
            tool = UNKNOWN_TOOL
        shown = name if isinstance(name, str) and tool != UNKNOWN_TOOL else tool
        wait_s = await limiter.take(user, tool)
        if wait_s is not None:
            text = limited_message(shown, limiter.limit_for(tool), wait_s)
        else:
            grouped = await limiter.take_group(user, tool)
            if grouped is None:
                return await call_next(ctx)
            text = group_limited_message(shown, *grouped)
        logger.info("rate limited user={} tool={}", user, tool)
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    return middleware
