"""The call a tool serves (`tooling`'s docstring): what a source's tools read of the request, and
the slots each layer finds it in. Apart from the tool plumbing, so a layer naming its call (the
notes' writing, the aggregator) does not load the MCP SDK with it (`knowledge-mcp import` never
needs the SDK; docs/performance.md, "Lazy imports")."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from ..errors import KnowledgeError

if TYPE_CHECKING:
    from ..retrieval import Defaults
    from ..search.rerank.backend import Reranking
    from ..storage.store import Store

__all__ = ["CALL", "Call", "CallSlot", "current_call"]

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

    async def database(self, source: str) -> Store:
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
