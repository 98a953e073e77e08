"""The per-request context: who is asking, from which client, and which databases are theirs.

Built only from the transport's authentication (or the single local user of stdio and
`--no-auth`); nothing in a request's arguments can change it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.db import Database, Migration, open_database, user_dir

_current_request: ContextVar[ServerRequestContext[Any, Any] | None] = ContextVar(
    "current_request", default=None
)


@dataclass(frozen=True)
class RequestContext:
    user_id: str
    client_id: str | None
    db_paths: Mapping[str, Path]

    @classmethod
    def for_user(cls, data_dir: Path, user_id: str, client_id: str | None = None) -> RequestContext:
        home = user_dir(data_dir, user_id)  # validated and resolved once, not once per source
        paths = {name: home / f"{name}.db" for name in SOURCES}
        return cls(user_id, client_id, MappingProxyType(paths))


async def remember_request(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: keep the inbound request's context for handlers that get none.

    MCPServer hands a Context to tools and resource templates but not to static resources;
    they find the request being served through `current_request()`.
    """
    token = _current_request.set(ctx)
    try:
        return await call_next(ctx)
    finally:
        _current_request.reset(token)


def current_request() -> ServerRequestContext[Any, Any]:
    """The context of the request being served (set by `remember_request`)."""
    request = _current_request.get()
    if request is None:
        raise RuntimeError("no MCP request is being served here")
    return request


class DatabasePool:
    """Open databases by path, opened (and migrated) once, closed together at shutdown."""

    def __init__(self, memory_index_max_chunks: int | None = None) -> None:
        self._open: dict[Path, Database] = {}
        self._lock = asyncio.Lock()
        self._memory_index_max_chunks = memory_index_max_chunks

    async def get(self, path: Path, source: str) -> Database:
        return await self.open(path, SOURCES[source].migrations)

    async def open(self, path: Path, migrations: Sequence[Migration]) -> Database:
        """The database at `path`, opened and migrated with `migrations` on first use."""
        db = self._open.get(path)
        if db is not None:
            return db
        async with self._lock:
            if path not in self._open:
                db = await open_database(path, migrations)
                db.memory_index_max_chunks = self._memory_index_max_chunks
                self._open[path] = db
            return self._open[path]

    async def settled(self) -> None:
        """Wait for the open databases' background work: the memory copies of small sources and
        the vocabularies of large ones (`sources.memory_index`), started by their first search."""
        for db in list(self._open.values()):
            indexes = db.caches.get("memory_index")
            if indexes is not None:
                await indexes.ready()

    async def close(self) -> None:
        for db in self._open.values():
            await db.close()
        self._open.clear()
