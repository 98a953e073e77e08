"""Protocol errors with the code the spec gives them (DESIGN §10).

The SDK answers a `prompts/get` for a prompt that does not exist with error code 0 and logs the
request, parameters included, with a traceback at ERROR. A name the client sent that names
nothing is invalid params (-32602): this middleware answers that, in one plain sentence, and
the request log line records it like any other protocol error.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS


def unknown_names(mcp: MCPServer) -> Any:
    """Server middleware: `prompts/get` of an unknown prompt is -32602, naming what exists."""

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "prompts/get":
            name = (ctx.params or {}).get("name")
            known = sorted(p.name for p in await mcp.list_prompts())
            if name not in known:
                allowed = ", ".join(known) if known else "none: this server has no prompts"
                raise MCPError(INVALID_PARAMS, f"unknown prompt {name!r}; the prompts are: {allowed}")
        return await call_next(ctx)

    return middleware
