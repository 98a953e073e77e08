"""The composition root: `build_server(settings)` wires sources, context and transports."""

from __future__ import annotations

import time
from typing import Any

from loguru import logger
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse

from sources.db import Database
from sources.registry import SOURCES, registrars
from sources.retrieval import Defaults

from .config import Settings
from .context import DatabasePool, RequestContext, current_request, remember_request

INSTRUCTIONS = """knowledge-mcp searches the user's own knowledge: personal notes (and, as they are \
imported, media, chats, character cards and prompts). Search first (e.g. notes_search), then \
read only what you need with the matching get tool, passing the result's id and loc and a \
retrieval budget (mode chunk_with_siblings with max_tokens)."""


class ServerHost:
    """Implements the sources' ToolHost: resolves the caller's context, databases and defaults."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.pool = DatabasePool()
        self._defaults = settings.defaults()

    def context(self, request: ServerRequestContext[Any, Any]) -> RequestContext:
        """The caller's context; the user comes from authentication, else the local user."""
        client = None
        params = getattr(request.session, "client_params", None)
        if params is not None and params.client_info is not None:
            client = params.client_info.name
        return RequestContext.for_user(self.settings.data_dir, self.settings.user, client)

    async def database(self, ctx: Context, source: str) -> Database:
        return await self._database(self.context(ctx.request_context), source)

    async def current_database(self, source: str) -> Database:
        return await self._database(self.context(current_request()), source)

    async def _database(self, request: RequestContext, source: str) -> Database:
        started = time.perf_counter()
        db = await self.pool.get(request.db_paths[source], source)
        elapsed_ms = (time.perf_counter() - started) * 1000
        logger.debug("db ready user={} source={} in {:.1f} ms", request.user_id, source, elapsed_ms)
        return db

    def defaults(self, ctx: Context) -> Defaults:
        return self._defaults

    def tool_name(self, name: str) -> str:
        if self.settings.tool_names == "dotted":
            prefix, _, rest = name.partition("_")
            return f"{prefix}.{rest}" if rest else name
        return name


def build_server(settings: Settings) -> tuple[MCPServer, ServerHost]:
    """The MCP server with every source's tools, and the host that owns its databases."""
    host = ServerHost(settings)
    mcp: MCPServer = MCPServer(
        "knowledge-mcp",
        title="knowledge-mcp",
        instructions=INSTRUCTIONS,
        version=_version(),
    )
    mcp.middleware.append(remember_request)
    for register in registrars():
        register(mcp, host)
    mcp.custom_route("/healthz", methods=["GET"])(healthz)
    return mcp, host


async def healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok", "sources": list(SOURCES)})


def http_app(mcp: MCPServer, settings: Settings) -> Starlette:
    """Streamable HTTP at /mcp, plus /healthz."""
    return mcp.streamable_http_app(streamable_http_path="/mcp", host=settings.host)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("knowledge-mcp")
    except PackageNotFoundError:
        return "0.0.0"


__all__: list[Any] = ["ServerHost", "build_server", "http_app"]
