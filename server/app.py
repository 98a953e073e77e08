"""The composition root: `build_server(settings)` wires sources, calls, auth, sessions and limits."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse

from knowledge_mcp import DISTRIBUTION
from knowledge_mcp.aggregator import deep_research
from knowledge_mcp.aggregator import tools as aggregator_tools
from knowledge_mcp.aggregator.quotes import verify
from knowledge_mcp.aggregator.quotes.work import QuoteWork
from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.notes.writing.stores import NoteStore
from knowledge_mcp.sources.registry import SOURCES, registrars
from knowledge_mcp.sources.search.background import BackgroundIndexer
from knowledge_mcp.sources.search.dense.embedder import load_in_background
from knowledge_mcp.sources.search.dense.runtime.heap import release_large_blocks
from knowledge_mcp.sources.storage.store import Store

from .auth.limit_gate import rate_limit
from .auth.limits import RateLimiter
from .auth.refusal import write_refusal
from .auth.tokens import JwtVerifier, KnowledgeTokenVerifier, auth_settings, authenticated_user
from .backend import open_backend
from .backend.warm import WarmStart, first_search
from .call import SERVER_CALL, serve_calls
from .config import Settings
from .context import RequestContext
from .logs import log_requests
from .logs.guard import guard_logs
from .protocol_errors import protocol_guard
from .resources import ItemChange, Notifier
from .resources import register as register_resources
from .sessions.tools import register as register_session_tools
from .sessions.transport import client_name, process_session_id
from .tool_arguments import plain_argument_errors
from .tool_list import WriteGate, publish_tools
from .watch.events import ChangeFeed

RESEARCH_TOOLS = ("verify_quote", "session_cite")
"""The tools that check quotes: one rate limit a user for them together
(`research_rate_limit_per_minute`), as for the write tools (`write_rate_limit_per_minute`)."""
WRITE_TOOLS = ("notes_create", "notes_update")
INSTRUCTIONS = """knowledge-mcp searches the user's own knowledge: notes, media (documents, \
PDFs, web pages, transcripts, emails), chats, character cards and prompts. Start with \
knowledge_search (every source in one ranked list; within a session it stops repeating items \
already shown) or a source's own *_search for its filters. Then read only what you need with \
knowledge_get (or the source's *_get), passing the result's uri/id and loc and a retrieval \
budget (mode chunk_with_siblings with max_tokens)."""


class NotAuthenticatedError(KnowledgeError):
    pass


class Services:
    """The server's services, built once: databases, sessions, keys, limits, notifications, and
    the authentication decided at start-up. Each request's call (`call.py`) reads them."""

    def __init__(self, settings: Settings, *, authenticate: bool = False) -> None:
        self.settings = settings
        background = BackgroundIndexer() if settings.embed_in_background else None
        self.backend = open_backend(settings, background=background)
        """Where items, sessions, keys and rate limits live (`server/backend`), chosen once."""
        self.pool = self.backend.pool  # the SQLite files opened and the embedding worker
        self.sessions = self.backend.sessions  # the session tools' and transports' store
        self.defaults = settings.defaults()
        self.quote_work = QuoteWork(settings.quote_budget_s)
        self.process_session_id = process_session_id()
        # True when HTTP authentication is on: then the user is only ever the verified principal.
        self.authenticated = authenticate
        # The credential check of HTTP, reused by the WebSocket handshake (None without auth).
        self.verifier = self._verifier() if authenticate else None
        # Tells a user's connected clients that their items changed (server/resources/notify.py).
        self.notifier = Notifier(self.current_user)
        self.changes = ChangeFeed()
        """What changed in the users' sources (`serve --watch` publishes each batch it wrote)."""
        self.changes.subscribe(self.notifier.publish)
        self.warm_start = (
            None
            if authenticate
            else WarmStart(
                self.backend.items, settings.data_dir, settings.user, self.defaults, self.pool.settled
            )
        )
        """The local user's sources and search tool made ready after start (`backend/warm.py`)."""

    async def close(self) -> None:
        """Close the backend: its databases, pools and embedding worker."""
        if self.warm_start is not None:
            await self.warm_start.stop()
        await self.backend.close()

    def start_background(self) -> None:
        """Start loading the embedding model on a thread of its own (`load_model_in_background`:
        searches answer lexically, saying so, until it is loaded; then the local user's sources
        and search tool are made ready, `backend/warm.py`) and the embedding worker
        (`embed_in_background`) on the running event loop: the transports call it when they start
        serving. Large blocks go back to the system as soon as they are freed
        (`heap.release_large_blocks`: a copy of an index rebuilt or a model run's tensors are not
        kept after)."""
        release_large_blocks()
        if self.settings.load_model_in_background:
            warm = self.warm_start
            load_in_background(
                None if warm is None else functools.partial(warm.begin, asyncio.get_running_loop())
            )
        self.backend.start_background()

    def _verifier(self) -> KnowledgeTokenVerifier:
        """HTTP requests need a JWT or API key (`auth/tokens.py`), each served as the user it names."""
        s = self.settings
        jwt = JwtVerifier.from_settings(s)
        return KnowledgeTokenVerifier(jwt, self.backend.keys, cache_s=s.credential_cache_s)

    def context(self, request: ServerRequestContext[Any, Any]) -> RequestContext:
        """The caller's context; the user comes from authentication, else the local user."""
        user = self.user_of(request)
        return RequestContext.for_user(self.settings.data_dir, user, client_name(request))

    def user_of(self, request: ServerRequestContext[Any, Any]) -> str:
        """The verified principal with auth on (fail closed without one), else `settings.user`."""
        if not self.authenticated:
            return self.settings.user
        user = authenticated_user(getattr(request.request, "scope", None))
        if user is None:
            raise NotAuthenticatedError("this request carries no verified credentials")
        return user

    def current_user(self) -> str | None:
        """The user of the request being served, or None outside a request (or with none verified)."""
        try:
            return SERVER_CALL.get().user_id
        except (RuntimeError, KnowledgeError):
            return None

    async def items_changed(
        self,
        request: RequestContext,
        source: str,
        *,
        added: tuple[str, ...] = (),
        updated: tuple[str, ...] = (),
        removed: tuple[str, ...] = (),
    ) -> None:
        """A write changed the caller's items: tell their connected clients (and, on PostgreSQL,
        the embedding worker: the new chunks get vectors without waiting for its next look)."""
        user = request.user_id
        await self.backend.items.changed(user, source, request.db_paths[source])
        await self.notifier.publish(ItemChange(user, source, added, updated, removed))

    async def database(self, request: RequestContext, source: str) -> Store:
        """The store of `source` of the caller of `request` (the backend's items)."""
        return await self.backend.items.read(request.user_id, source, request.db_paths[source])

    async def notes(self, request: RequestContext) -> NoteStore:
        """The caller's notes as the writer indexes them (the backend's items)."""
        return await self.backend.items.notes(request.user_id, request.db_paths["notes"])

    def write_refusal(self, request: ServerRequestContext[Any, Any]) -> str | None:
        """Why this caller may not write, or None (`auth/refusal.write_refusal`)."""
        return write_refusal(
            read_only=self.settings.read_only,
            authenticated=self.authenticated,
            networked=request.request is not None,
            scope=getattr(request.request, "scope", None),
        )

    def tool_name(self, name: str) -> str:
        if self.settings.tool_names == "dotted":
            prefix, _, rest = name.partition("_")
            return f"{prefix}.{rest}" if rest else name
        return name


def build_server(settings: Settings, *, authenticate: bool = False) -> tuple[MCPServer, Services]:
    """The MCP server with every source's tools, and the services that own its databases.

    With `authenticate`, HTTP requests need a JWT or API key (`server/auth/tokens.py`) and each is
    served as the user it names.
    """
    guard_logs()  # exceptions reach the log without values, embedded or not
    services = Services(settings, authenticate=authenticate)
    auth: dict[str, Any] = {}
    if services.verifier is not None:
        auth = {"token_verifier": services.verifier, "auth": auth_settings(settings)}
    mcp: MCPServer = MCPServer(
        "knowledge-mcp",
        title="knowledge-mcp",
        instructions=INSTRUCTIONS,
        version=_version(),
        subscriptions=services.notifier.bus,
        **auth,
    )
    add_middleware(mcp, services)
    rename = services.tool_name
    for register in registrars():
        register(mcp, rename)
    register_session_tools(mcp, rename)
    register_resources(
        mcp,
        services.notifier,
        rename,
        max_chars=settings.resource_max_chars,
        list_limit=settings.resource_list_limit,
    )
    aggregator_tools.register(mcp, rename)
    verify.register(mcp, rename)
    deep_research.register(mcp, mode=settings.deep_research_aliases, clients=settings.deep_research_clients)
    publish_tools(mcp, settings.tool_profile)
    if services.warm_start is not None:
        services.warm_start.tool = functools.partial(first_search, mcp, services, rename("knowledge_search"))
    mcp.custom_route("/healthz", methods=["GET"])(healthz)
    return mcp, services


def add_middleware(mcp: MCPServer, services: Services) -> None:
    """Logging, protocol errors, quote budgets, rate limits; then the request's call is built
    (`call.py`) for argument errors, the write gate and the handlers."""
    settings = services.settings
    groups = (
        {  # rate_limit_per_minute = 0 turns every limit off, the groups' too
            "research tools": (RESEARCH_TOOLS, settings.research_rate_limit_per_minute),
            "write tools": (WRITE_TOOLS, settings.write_rate_limit_per_minute),
        }
        if settings.rate_limit_per_minute > 0
        else {}
    )
    limiter = RateLimiter(
        settings.rate_limit_per_minute, settings.rate_limits, shared=services.backend.buckets, groups=groups
    )
    mcp.middleware.append(log_requests(services.user_of))
    mcp.middleware.append(protocol_guard)
    mcp.middleware.append(services.quote_work.counting)
    mcp.middleware.append(rate_limit(limiter, services.user_of, lambda: _tool_names(mcp)))
    mcp.middleware.append(serve_calls(services))
    mcp.middleware.append(services.notifier.track)
    mcp.middleware.append(plain_argument_errors(mcp))
    mcp.middleware.append(WriteGate(services.write_refusal))


async def _tool_names(mcp: MCPServer) -> list[str]:
    return [tool.name for tool in await mcp.list_tools()]


async def healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok", "sources": list(SOURCES)})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0.0.0"


__all__: list[Any] = ["Services", "build_server"]
