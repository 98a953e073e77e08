"""A warm first call: the local user's sources and the search tool are made ready after start.

`serve` loads the embedding model in the background as it starts (`load_model_in_background`,
`sources/search/dense/embedder.py`). When it is loaded, and the server serves one local user
(stdio, or HTTP without authentication), `WarmStart` runs these steps as a task on the event
loop, like any request (a request made meanwhile is served beside it), and never fails the server
(a step that fails is left to the first real call, which says why):

1. one small hybrid search of each of the user's sources that has a database: it opens and checks
   the database, reads its vectors and starts the in-memory copy of its index
   (`lexical/memory_index.py`, built by a worker thread in a few seconds);
2. one `knowledge_search` of those sources through the tool itself (`first_search`), as a call
   with no session: the aggregator's fan-out, the rendering, the tool's result model and what
   each builds at its first use. Nothing is recorded (no session, no seen items, no request log
   line) and no database is made;
3. once the copies are built, one hybrid search of each again: the copies' first use.

Steps 2 and 3 take off the user's first search what it still did once: the session store
opened, the glossary read, the tool's models built, the copies' first reads (`docs/performance.md`,
"The first call, found"). The copies are not started before the model is loaded: built beside
the load, they slowed a lexical answer asked right after `initialize` and did not make the first
hybrid one faster (measured there).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from loguru import logger
from mcp.server.mcpserver import MCPServer

from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.request import SearchRequest

from ..call import CallServices, RequestCall, serving
from ..context import RequestContext
from .protocols import Items

WARM_QUERY = "warm up"
WARM_SEARCH: dict[str, Any] = {"query": WARM_QUERY, "limit": 10, "mode": "hybrid", "seen": "show"}
"""The arguments of the tool-path warm-up: the shape of a first question (hybrid, top 10)."""
READ_ONLY = "the warm-up only reads"


class WarmStart:
    """The local user's sources searched, and the search tool called, once the model has loaded
    (`begin`)."""

    def __init__(
        self,
        items: Items,
        data_dir: Path,
        user: str,
        defaults: Defaults,
        settled: Callable[[], Awaitable[None]],
    ) -> None:
        self.items, self.data_dir, self.user, self.defaults = items, data_dir, user, defaults
        self.settled = settled
        """Waits for the open databases' in-memory copies (`DatabasePool.settled`)."""
        self.tool: Callable[[list[str]], Awaitable[None]] | None = None
        """The tool-path step (`first_search`) over the named sources, set by `build_server` once
        the tools exist."""
        self.task: asyncio.Task[None] | None = None
        self.stopped = False
        self.warmed: list[str] = []
        """The sources searched so far (hybrid)."""
        self.tool_warmed = False
        """Whether the search tool has answered once."""

    def begin(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the steps on `loop` (the model loader calls this from its thread when done)."""

        def start() -> None:
            if self.task is None and not self.stopped:
                self.task = loop.create_task(self.run(), name="warm-start")

        with contextlib.suppress(RuntimeError):  # the loop ended before the model was loaded
            loop.call_soon_threadsafe(start)

    async def run(self) -> None:
        await self._search_sources(limit=1)  # the databases opened, the vectors read
        if self.warmed:  # no database is made for the warm-up: only those the user has are read
            await self._search_tool(self.warmed)
        with contextlib.suppress(Exception):  # a copy that failed is logged by its builder
            await self.settled()
        await self._search_sources(limit=10)  # the copies' first use

    async def _search_tool(self, sources: list[str]) -> None:
        if self.tool is None:
            return
        try:
            await self.tool(sources)
            self.tool_warmed = True
        except Exception as error:  # the first real search tries again and says why
            logger.debug("warming up the search tool failed: {}", type(error).__name__)

    async def _search_sources(self, limit: int) -> None:
        paths = RequestContext.for_user(self.data_dir, self.user).db_paths
        for name, source in SOURCES.items():
            if not paths[name].exists():
                continue  # no database yet (or the items are in PostgreSQL): nothing to warm
            try:
                store = await self.items.read(self.user, name, paths[name])
                request = SearchRequest(WARM_QUERY, limit=limit, mode="hybrid")
                await source.search(store, request, self.defaults)
                if name not in self.warmed:
                    self.warmed.append(name)
            except Exception as error:  # the first real search tries again and says why
                logger.debug("warming up {} failed: {}", name, type(error).__name__)

    async def stop(self) -> None:
        self.stopped = True
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


async def first_search(mcp: MCPServer, services: CallServices, tool: str, sources: list[str]) -> None:
    """`tool` (knowledge_search, as the tool list names it) called once over the local user's
    `sources` as the server calls a tool, in a call without a session (so nothing is recorded as seen) and
    without a request (so nothing is logged); the user's session store opened first, as the
    first real call opens it. The result is dropped."""
    s = services.settings
    await services.sessions.timeline(s.user)  # opens sessions.db; no session is made
    call = RequestCall(
        services=services,
        context=RequestContext.for_user(s.data_dir, s.user),
        local=True,
        peer=None,
        transport_session=None,
        session=None,
        config_defaults=services.defaults,
        write_refusal=READ_ONLY,
    )
    with serving(call):
        result = await mcp.call_tool(tool, WARM_SEARCH | {"sources": sources})
    if getattr(result, "is_error", False):
        raise RuntimeError("the search tool answered with an error")
