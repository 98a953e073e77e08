"""The call a tool serves: who is asking and what they may use, built once per request.

The server builds one call per MCP request (`server/call.py`), from its authentication only, and
serves the request inside it; a tool reads it with `current_call()`. Each layer names what it
reads of the call with a protocol of its own and a `CallSlot` typed by it (the aggregator's adds
the session, the server's its services), and the server fills every slot with the same call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Generic, Protocol, TypeVar

from .errors import KnowledgeError
from .retrieval import Defaults
from .search.rerank.backend import Reranking
from .storage.db import Database

C = TypeVar("C")


class Call(Protocol):
    """What a source's tools read of the request they serve."""

    @property
    def user_id(self) -> str:
        """The authenticated user (or the single local user); never from a tool's arguments."""
        ...

    @property
    def client_name(self) -> str | None:
        """The client's clientInfo.name, when it gave one."""
        ...

    def defaults(self) -> Defaults:
        """Server config, overlaid by the request's config, then by the session's defaults
        (a tool's explicit input wins later, in the tool)."""
        ...

    async def database(self, source: str) -> Database:
        """The caller's database of `source`."""
        ...

    def reranking(self, rerank: bool) -> Reranking | None:
        """A search's `rerank`: None unless asked, else the configured reranker or the client's
        model (sampling)."""
        ...


class CallSlot(Generic[C]):
    """Where one layer finds the call of the request being served, typed by what it reads."""

    def __init__(self, name: str) -> None:
        self._var: ContextVar[C | KnowledgeError | None] = ContextVar(name, default=None)

    def get(self) -> C:
        """The call being served; the reason there is none (no verified user) is raised as is."""
        call = self._var.get()
        if call is None:
            raise RuntimeError("no MCP request is being served here")
        if isinstance(call, KnowledgeError):
            raise call
        return call

    @contextmanager
    def serving(self, call: C | KnowledgeError) -> Iterator[None]:
        """Serve a request inside `call` (or, when it could not be built, the reason why)."""
        token = self._var.set(call)
        try:
            yield
        finally:
            self._var.reset(token)


CALL: CallSlot[Call] = CallSlot("call")


def current_call() -> Call:
    """The call of the request being served (what a source's tool reads)."""
    return CALL.get()
