"""The call: one request's context, built once by one middleware and read by every tool.

`serve_calls` builds a `RequestCall` for each MCP request from the request's authentication
only (the user, exactly as `Services.user_of` decides), its client, its paths, the transport's
session (loaded before a tool runs), the request config under it and the caller's permit to
write or why not; then it serves the request inside the call. Tools read it through their
layer's slot: `sources.tooling.current_call()`, `aggregator.calls.current_call()`, the notes'
`WRITING_CALL` and the server's own `current_call()` here. A request whose user cannot be
decided (authentication on, no verified credentials) is served with the reason instead, which
any read of the call raises.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any, Protocol

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext

from knowledge_mcp.aggregator.calls import AGGREGATOR_CALL, AggregatorCall
from knowledge_mcp.aggregator.quotes.work import QuoteWork
from knowledge_mcp.sources.errors import KnowledgeError, WriteNotAllowedError
from knowledge_mcp.sources.notes.writing import WRITING_CALL, WritePermit, WritingCall
from knowledge_mcp.sources.notes.writing.stores import NoteStore
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.rerank.backend import Reranking
from knowledge_mcp.sources.search.rerank.choice import reranking
from knowledge_mcp.sources.storage.db import user_dir
from knowledge_mcp.sources.storage.store import Store
from knowledge_mcp.sources.tooling import CALL, CallSlot

from .backend.protocols import Sessions
from .config import Settings
from .context import RequestContext
from .request_config import EMPTY, RequestConfig
from .request_defaults import config_of, with_config_warnings
from .sessions.store import StoredSession
from .sessions.transport import preloaded, transport_session_id, validate_session_id


class CallServices(Protocol):
    """What a call uses of the server's services (`app.Services`)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def sessions(self) -> Sessions: ...

    @property
    def quote_work(self) -> QuoteWork: ...

    @property
    def process_session_id(self) -> str: ...

    @property
    def defaults(self) -> Defaults:
        """The server config's defaults."""
        ...

    def context(self, request: ServerRequestContext[Any, Any]) -> RequestContext: ...

    def write_refusal(self, request: ServerRequestContext[Any, Any]) -> str | None: ...

    async def database(self, request: RequestContext, source: str) -> Store: ...

    async def notes(self, request: RequestContext) -> NoteStore: ...

    async def items_changed(
        self,
        request: RequestContext,
        source: str,
        *,
        added: tuple[str, ...] = (),
        updated: tuple[str, ...] = (),
        removed: tuple[str, ...] = (),
    ) -> None: ...


@dataclass(frozen=True)
class RequestCall:
    """One request's call; `with_session` gives another, nothing changes one once built."""

    services: CallServices
    context: RequestContext
    local: bool
    """No transport request: the single local user of stdio (and the in-memory transport)."""
    peer: Any
    """The MCP session of the client, for reranking by its model (sampling)."""
    transport_session: str | None
    """The transport's own session key (None: stateless HTTP)."""
    session: StoredSession | None
    config_defaults: Defaults
    """The server's defaults under the request's config."""
    write_refusal: str | None
    session_tried: bool = False
    """The transport's session was asked for already (`session` None: there is none, or its store
    failed and said so once): a tool asking for it again is answered from here."""

    @property
    def user_id(self) -> str:
        return self.context.user_id

    @property
    def client_name(self) -> str | None:
        return self.context.client_id

    @property
    def sessions(self) -> Sessions:
        return self.services.sessions

    @property
    def quote_work(self) -> QuoteWork:
        return self.services.quote_work

    @property
    def source_timeout_s(self) -> float:
        return self.services.settings.source_timeout_s

    def defaults(self) -> Defaults:
        """The request's defaults under the session's (read now: a tool may have just set them)."""
        if self.session is None or not self.session.defaults:
            return self.config_defaults
        return replace(self.config_defaults, **self.session.defaults)

    async def database(self, source: str) -> Store:
        return await self.services.database(self.context, source)

    async def note_store(self) -> NoteStore:
        return await self.services.notes(self.context)

    def reranking(self, rerank: bool) -> Reranking | None:
        if not rerank:
            return None
        s = self.services.settings
        return reranking(self.peer, s.rerank_model, s.rerank_tokenizer, s.rerank_timeout_s)

    async def with_session(self, session_id: str | None) -> RequestCall:
        """The explicit `session_id`'s session, else the transport's (loaded now if it was not)."""
        if session_id is None and (self.session is not None or self.session_tried):
            return self
        return replace(self, session=await self.open_session(session_id))

    async def open_session(self, session_id: str | None = None) -> StoredSession | None:
        key = validate_session_id(session_id) if session_id is not None else self.transport_session
        if key is None:
            return None
        # A transport's own session follows the research session session_start made current.
        return await self.services.sessions.open(self.user_id, key, follow=session_id is None)

    def write_permit(self) -> WritePermit:
        """The caller's permit to write notes, or WriteNotAllowedError saying why not."""
        if self.write_refusal is not None:
            raise WriteNotAllowedError(self.write_refusal)
        s = self.services.settings
        return WritePermit(
            home=user_dir(s.data_dir, self.user_id),
            local=self.local,
            notes_dir=s.notes_dir,
            duplicate_check_ms=s.duplicate_check_ms,
            max_note_bytes=s.max_note_bytes,
            quota_bytes=int(s.notes_quota_mb * 1_000_000),
        )

    async def items_changed(
        self,
        source: str,
        *,
        added: tuple[str, ...] = (),
        updated: tuple[str, ...] = (),
        removed: tuple[str, ...] = (),
    ) -> None:
        await self.services.items_changed(self.context, source, added=added, updated=updated, removed=removed)


SERVER_CALL: CallSlot[RequestCall] = CallSlot("server_call")


def current_call() -> RequestCall:
    """The call of the request being served, as the server's own tools read it."""
    return SERVER_CALL.get()


async def build_call(
    services: CallServices, request: ServerRequestContext[Any, Any], config: RequestConfig
) -> RequestCall:
    """The request's call; a tool call's transport session is loaded here (a failing session
    store is logged and the call goes on without one)."""
    call = RequestCall(
        services=services,
        context=services.context(request),
        local=request.request is None,
        peer=request.session,
        transport_session=transport_session_id(request, services.process_session_id),
        session=None,
        config_defaults=replace(services.defaults, **config.values) if config.values else services.defaults,
        write_refusal=services.write_refusal(request),
    )
    if request.method != "tools/call":
        return call
    return replace(call, session=await preloaded(call.open_session), session_tried=True)


def serve_calls(services: CallServices) -> ServerMiddleware[Any]:
    """Server middleware: build the request's call once and serve the request inside it; a tool
    call's result gets its request config's warnings (`request_defaults`)."""

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        config = config_of(ctx) if ctx.method == "tools/call" else EMPTY
        call: RequestCall | KnowledgeError
        try:
            call = await build_call(services, ctx, config)
        except KnowledgeError as exc:  # no verified user: every read of the call says so
            call = exc
        with serving(call):
            result = await call_next(ctx)
        return with_config_warnings(result, config)

    return middleware


def serving(call: RequestCall | KnowledgeError) -> ExitStack:
    """Every layer's slot filled with `call` (statically checked to be what each layer reads)."""
    aggregator: AggregatorCall | KnowledgeError = call
    writing: WritingCall | KnowledgeError = call
    stack = ExitStack()
    stack.enter_context(CALL.serving(call))
    stack.enter_context(AGGREGATOR_CALL.serving(aggregator))
    stack.enter_context(WRITING_CALL.serving(writing))
    stack.enter_context(SERVER_CALL.serving(call))
    return stack
