"""A warm first call: the local user's sources and the search tool are made ready after start.

When the server serves one local user (stdio, or HTTP without authentication) and loads the
embedding model in the background (`load_model_in_background`, `sources/search/dense/embedder.py`),
`WarmStart` runs these steps as a task on the event loop, like any request (a request made
meanwhile is served beside it), and never fails the server (a step that fails is left to the
first real call, which says why):

1. at once, one lexical search of each of the user's sources that has a database: it opens and
   checks the database and starts the in-memory copy of its index (`lexical/memory_index.py`,
   a few seconds of a worker thread), so the copy is built while the model loads, not after;
2. once the model is loaded, one hybrid search of each (its vectors read);
3. one `knowledge_search` through the tool itself (`first_search`), as a call with no session:
   the aggregator's fan-out, the rendering, the tool's result model and what each builds at its
   first use. Nothing is recorded: no session, no seen items, no request log line;
4. once the copies are built, one hybrid search of each again: the copies' first use.

Before, the first search after start paid for the copies being built beside it and for what the
tool path builds once (`docs/performance.md`, "The first call, measured again").
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
from knowledge_mcp.sources.search.request import SearchMode, SearchRequest

from ..call import CallServices, RequestCall, serving
from ..context import RequestContext
from .protocols import Items

WARM_QUERY = "warm up"
WARM_SEARCH: dict[str, Any] = {"query": WARM_QUERY, "limit": 10, "mode": "hybrid", "seen": "show"}
"""The arguments of the tool-path warm-up: the shape of a first question (hybrid, top 10)."""
READ_ONLY = "the warm-up only reads"


class WarmStart:
    """The local user's sources searched, lexically at start (`start`), then hybrid and through
    the search tool once the model has loaded (`loaded`)."""

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
        self.tool: Callable[[], Awaitable[None]] | None = None
        """The tool-path step (`first_search`), set by `build_server` once the tools exist."""
        self.task: asyncio.Task[None] | None = None
        self.stopped = False
        self.warmed: list[str] = []
        """The sources searched (hybrid) so far."""
        self.tool_warmed = False
        """Whether the search tool has answered once."""
        self._loaded: asyncio.Event | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the steps on `loop` (the server's start, on the loop's thread)."""
        if self.task is None and not self.stopped:
            self._loaded = asyncio.Event()
            self.task = loop.create_task(self.run(), name="warm-start")

    def loaded(self, loop: asyncio.AbstractEventLoop) -> None:
        """The model is loaded: go on with the hybrid steps (the loader calls this from its thread)."""

        def wake() -> None:
            if self._loaded is not None:
                self._loaded.set()

        with contextlib.suppress(RuntimeError):  # the loop ended before the model was loaded
            loop.call_soon_threadsafe(wake)

    async def run(self) -> None:
        await self._search_sources("lexical")  # the databases opened, their copies started
        if self._loaded is not None:
            await self._loaded.wait()
        await self._search_sources("hybrid")  # the vectors read
        await self._search_tool()
        with contextlib.suppress(Exception):  # a copy that failed is logged by its builder
            await self.settled()
        await self._search_sources("hybrid", limit=10)  # the copies' first use

    async def _search_tool(self) -> None:
        if self.tool is None:
            return
        try:
            await self.tool()
            self.tool_warmed = True
        except Exception as error:  # the first real search tries again and says why
            logger.debug("warming up the search tool failed: {}", type(error).__name__)

    async def _search_sources(self, mode: SearchMode, limit: int = 1) -> None:
        paths = RequestContext.for_user(self.data_dir, self.user).db_paths
        for name, source in SOURCES.items():
            if not paths[name].exists():
                continue  # no database yet (or the items are in PostgreSQL): nothing to warm
            try:
                store = await self.items.read(self.user, name, paths[name])
                await source.search(store, SearchRequest(WARM_QUERY, limit=limit, mode=mode), self.defaults)
                if mode == "hybrid" and name not in self.warmed:
                    self.warmed.append(name)
            except Exception as error:  # the first real search tries again and says why
                logger.debug("warming up {} failed: {}", name, type(error).__name__)

    async def stop(self) -> None:
        self.stopped = True
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


async def first_search(mcp: MCPServer, services: CallServices, tool: str) -> None:
    """`tool` (knowledge_search, as the tool list names it) called once for the local user as
    the server calls a tool, in a call without a session (so nothing is recorded as seen) and
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
        result = await mcp.call_tool(tool, WARM_SEARCH)
    if getattr(result, "is_error", False):
        raise RuntimeError("the search tool answered with an error")
