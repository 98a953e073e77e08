"""A warm first call: once the model is loaded, the local user's sources are searched once.

`serve` loads the embedding model in the background as it starts (`load_model_in_background`,
`sources/search/dense/embedder.py`). When it is loaded, and the server serves one local user
(stdio, or HTTP without authentication), `WarmStart` runs one small hybrid search of each of that
user's sources that has a database: it opens and checks the database and reads its vectors, so
the user's first search costs about what the next one does. It runs on the event loop as a task
like any request (a request made meanwhile is served beside it) and never fails the server: a
source it cannot search is left to the first real search, which says why.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from loguru import logger

from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.request import SearchRequest

from ..context import RequestContext
from .protocols import Items

WARM_QUERY = "warm up"


class WarmStart:
    """The local user's sources searched once after the model has loaded (`begin`)."""

    def __init__(self, items: Items, data_dir: Path, user: str, defaults: Defaults) -> None:
        self.items, self.data_dir, self.user, self.defaults = items, data_dir, user, defaults
        self.task: asyncio.Task[None] | None = None
        self.stopped = False
        self.warmed: list[str] = []
        """The sources searched so far."""

    def begin(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the searches on `loop` (the model loader calls this from its thread when done)."""

        def start() -> None:
            if self.task is None and not self.stopped:
                self.task = loop.create_task(self.run(), name="warm-start")

        with contextlib.suppress(RuntimeError):  # the loop ended before the model was loaded
            loop.call_soon_threadsafe(start)

    async def run(self) -> None:
        paths = RequestContext.for_user(self.data_dir, self.user).db_paths
        for name, source in SOURCES.items():
            if not paths[name].exists():
                continue  # no database yet (or the items are in PostgreSQL): nothing to warm
            try:
                store = await self.items.read(self.user, name, paths[name])
                await source.search(store, SearchRequest(WARM_QUERY, limit=1, mode="hybrid"), self.defaults)
                self.warmed.append(name)
            except Exception as error:  # the first real search tries again and says why
                logger.debug("warming up {} failed: {}", name, type(error).__name__)

    async def stop(self) -> None:
        self.stopped = True
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
