"""The composition root: `build_server(settings)` wires sources, context, auth, sessions and limits."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse

from knowledge_mcp import DISTRIBUTION
from knowledge_mcp.aggregator import deep_research
from knowledge_mcp.aggregator import tools as aggregator_tools
from knowledge_mcp.aggregator.quotes import verify
from knowledge_mcp.aggregator.quotes.work import QuoteWork
from knowledge_mcp.sources.errors import KnowledgeError, WriteNotAllowedError
from knowledge_mcp.sources.notes.writing import WritePermit
from knowledge_mcp.sources.registry import SOURCES, registrars
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.background import BackgroundIndexer
from knowledge_mcp.sources.search.rerank.backend import Reranking
from knowledge_mcp.sources.search.rerank.choice import reranking
from knowledge_mcp.sources.storage.db import user_dir
from knowledge_mcp.sources.storage.store import Store

from .auth.limits import RateLimiter, rate_limit
from .auth.scopes import write_refusal
from .auth.tokens import JwtVerifier, KnowledgeTokenVerifier, auth_settings, authenticated_user
from .backend import open_backend
from .config import Settings
from .context import RequestContext, current_request, remember_request
from .logs import log_requests
from .logs.guard import guard_logs
from .protocol_errors import protocol_guard
from .request_defaults import apply_request_config, request_config
from .resources import ItemChange, Notifier
from .resources import register as register_resources
from .sessions.store import StoredSession
from .sessions.tools import register as register_session_tools
from .sessions.transport import (
    client_name,
    preload_session,
    process_session_id,
    request_session,
    transport_session_id,
    use_session,
    validate_session_id,
)
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


class ServerHost:
    """Implements the sources' ToolHost: resolves the caller's context, databases and defaults."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        background = BackgroundIndexer() if settings.embed_in_background else None
        self.backend = open_backend(settings, background=background)
        """Where items, sessions, keys and rate limits live (`server/backend`), chosen once."""
        self.pool = self.backend.pool  # the SQLite files opened and the embedding worker
        self.sessions = self.backend.sessions  # the session tools' and transports' store
        self._defaults = settings.defaults()
        self.quote_work = QuoteWork(settings.quote_budget_s)
        self.process_session_id = process_session_id()
        # True when HTTP authentication is on: then the user is only ever the verified principal.
        self.authenticated = False
        # The credential check of HTTP, reused by the WebSocket handshake (None without auth).
        self.verifier: KnowledgeTokenVerifier | None = None
        # Tells a user's connected clients that their items changed (server/resources/notify.py).
        self.notifier = Notifier(self.current_user)
        self.changes = ChangeFeed()
        """What changed in the users' sources (`serve --watch` publishes each batch it wrote)."""
        self.changes.subscribe(self.notifier.publish)

    async def close(self) -> None:
        """Close the backend: its databases, pools and embedding worker."""
        await self.backend.close()

    def start_background(self) -> None:
        """Start the embedding worker (`embed_in_background`) on the running event loop: the
        transports call it when they start serving."""
        self.backend.start_background()

    def context(self, request: ServerRequestContext[Any, Any]) -> RequestContext:
        """The caller's context; the user comes from authentication, else the local user."""
        client = None
        params = getattr(request.session, "client_params", None)
        if params is not None and params.client_info is not None:
            client = params.client_info.name
        return RequestContext.for_user(self.settings.data_dir, self.user_of(request), client)

    def user_of(self, request: ServerRequestContext[Any, Any]) -> str:
        """The verified principal with auth on (fail closed without one), else `settings.user`."""
        if not self.authenticated:
            return self.settings.user
        user = authenticated_user(getattr(request.request, "scope", None))
        if user is None:
            raise NotAuthenticatedError("this request carries no verified credentials")
        return user

    def current_user(self) -> str | None:
        """The user of the request being served, or None outside a request."""
        try:
            return self.user_of(current_request())
        except (RuntimeError, KnowledgeError):
            return None

    async def items_changed(
        self,
        ctx: Context,
        source: str,
        *,
        added: tuple[str, ...] = (),
        updated: tuple[str, ...] = (),
        removed: tuple[str, ...] = (),
    ) -> None:
        """A write changed the caller's items: tell their connected clients (and, on PostgreSQL,
        the embedding worker: the new chunks get vectors without waiting for its next look)."""
        request = self.context(ctx.request_context)
        user = request.user_id
        await self.backend.items.changed(user, source, request.db_paths[source])
        await self.notifier.publish(ItemChange(user, source, added, updated, removed))

    async def database(self, ctx: Context, source: str) -> Store:
        return await self._database(self.context(ctx.request_context), source)

    async def current_database(self, source: str) -> Store:
        return await self._database(self.context(current_request()), source)

    async def _database(self, request: RequestContext, source: str) -> Store:
        return await self.backend.items.read(request.user_id, source, request.db_paths[source])

    def write_refusal(self, request: ServerRequestContext[Any, Any]) -> str | None:
        """Why this caller may not write, or None (`auth/scopes.write_refusal`)."""
        return write_refusal(
            read_only=self.settings.read_only,
            authenticated=self.authenticated,
            networked=request.request is not None,
            scope=getattr(request.request, "scope", None),
        )

    def write_permit(self, ctx: Context) -> WritePermit:
        """The caller's permit to write notes, or WriteNotAllowedError saying why not."""
        refusal = self.write_refusal(ctx.request_context)
        if refusal is not None:
            raise WriteNotAllowedError(refusal)
        user = self.context(ctx.request_context).user_id
        return WritePermit(
            home=user_dir(self.settings.data_dir, user),
            local=ctx.request_context.request is None,
            notes_dir=self.settings.notes_dir,
            duplicate_check_ms=self.settings.duplicate_check_ms,
            max_note_bytes=self.settings.max_note_bytes,
            quota_bytes=int(self.settings.notes_quota_mb * 1_000_000),
        )

    def defaults(self, ctx: Context) -> Defaults:
        """Server config, overlaid by the request's config, then by the session's defaults
        (explicit tool input wins later, in the tool).

        Synchronous: the session was loaded before the tool ran (`preload_session`), or by
        `session()` earlier in the same call, and the request config by `apply_request_config`.
        """
        defaults = self._defaults
        overrides = request_config().values
        if overrides:
            defaults = replace(defaults, **overrides)
        session = request_session()
        if session is None or not session.defaults:
            return defaults
        return replace(defaults, **session.defaults)

    async def session(self, ctx: Context, session_id: str | None) -> StoredSession | None:
        """The explicit `session_id`, else the transport's session, else None; it becomes the
        request's session, so `defaults(ctx)` applies its defaults from here on."""
        if session_id is None and request_session() is not None:
            return request_session()
        session = await self._open_session(ctx.request_context, session_id)
        use_session(session)
        return session

    async def _open_session(
        self, request: ServerRequestContext[Any, Any], session_id: str | None = None
    ) -> StoredSession | None:
        if session_id is not None:
            key: str | None = validate_session_id(session_id)
        else:
            key = transport_session_id(request, self.process_session_id)
        if key is None:
            return None
        # A transport's own session follows the research session session_start made current.
        return await self.sessions.open(self.context(request).user_id, key, follow=session_id is None)

    def client_name(self, ctx: Context) -> str | None:
        return client_name(ctx.request_context)

    def reranking(self, ctx: Context) -> Reranking:
        """The reranker of a `rerank: true` call: the configured model, else the client's sampling."""
        s = self.settings
        return reranking(ctx.session, s.rerank_model, s.rerank_tokenizer, s.rerank_timeout_s)

    def tool_name(self, name: str) -> str:
        if self.settings.tool_names == "dotted":
            prefix, _, rest = name.partition("_")
            return f"{prefix}.{rest}" if rest else name
        return name


def build_server(settings: Settings, *, authenticate: bool = False) -> tuple[MCPServer, ServerHost]:
    """The MCP server with every source's tools, and the host that owns its databases.

    With `authenticate`, HTTP requests need a JWT or API key (`server/auth/tokens.py`) and each is
    served as the user it names.
    """
    guard_logs()  # exceptions reach the log without values, embedded or not
    host = ServerHost(settings)
    auth: dict[str, Any] = {}
    if authenticate:
        jwt_verifier = JwtVerifier.from_settings(settings)
        verifier = KnowledgeTokenVerifier(
            jwt_verifier, host.backend.keys, cache_s=settings.credential_cache_s
        )
        auth = {"token_verifier": verifier, "auth": auth_settings(settings)}
        host.authenticated = True
        host.verifier = verifier
    mcp: MCPServer = MCPServer(
        "knowledge-mcp",
        title="knowledge-mcp",
        instructions=INSTRUCTIONS,
        version=_version(),
        subscriptions=host.notifier.bus,
        **auth,
    )
    groups = (
        {  # rate_limit_per_minute = 0 turns every limit off, the groups' too
            "research tools": (RESEARCH_TOOLS, settings.research_rate_limit_per_minute),
            "write tools": (WRITE_TOOLS, settings.write_rate_limit_per_minute),
        }
        if settings.rate_limit_per_minute > 0
        else {}
    )
    limiter = RateLimiter(
        settings.rate_limit_per_minute, settings.rate_limits, shared=host.backend.buckets, groups=groups
    )
    mcp.middleware.append(log_requests(host.user_of))
    mcp.middleware.append(protocol_guard)
    mcp.middleware.append(host.quote_work.counting)
    mcp.middleware.append(rate_limit(limiter, host.user_of, lambda: _tool_names(mcp)))
    mcp.middleware.append(remember_request)
    mcp.middleware.append(host.notifier.track)
    mcp.middleware.append(preload_session(host._open_session))
    mcp.middleware.append(apply_request_config)
    mcp.middleware.append(plain_argument_errors(mcp))
    mcp.middleware.append(WriteGate(host.write_refusal))
    for register in registrars():
        register(mcp, host)
    register_session_tools(mcp, host)
    register_resources(
        mcp, host, max_chars=settings.resource_max_chars, list_limit=settings.resource_list_limit
    )
    aggregator_tools.register(mcp, host, source_timeout_s=settings.source_timeout_s)
    verify.register(mcp, host)
    deep_research.register(
        mcp,
        host,
        mode=settings.deep_research_aliases,
        clients=settings.deep_research_clients,
        source_timeout_s=settings.source_timeout_s,
    )
    publish_tools(mcp, settings.tool_profile)
    mcp.custom_route("/healthz", methods=["GET"])(healthz)
    return mcp, host


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


__all__: list[Any] = ["ServerHost", "build_server"]
