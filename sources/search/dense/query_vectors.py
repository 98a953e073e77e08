"""Query vectors, embedded once per text: `knowledge_search` asks every source at the same time
with the same query, and a person pages through the same query; each would embed it again.

The first caller starts the embedding (on a worker thread, submitted at once: `start`, so the
caller can do other work, e.g. bm25's retrieval, while it runs); callers that ask for the same
text meanwhile wait for that one. The last `SIZE` texts' vectors are kept.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

import numpy as np

from .embedder import Embedder, Vectors

SIZE = 256


class QueryVectors:
    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._vectors: OrderedDict[tuple[str, str], Vectors | asyncio.Future[Vectors]] = OrderedDict()

    async def get(self, model: Embedder, text: str) -> Vectors:
        return await self.wait(self.start(model, text))

    def start(self, model: Embedder, text: str) -> Vectors | asyncio.Future[Vectors]:
        """The text's vector, or the embedding that will give it (already on its thread)."""
        key = (model.model_id, text)
        entry = self._vectors.get(key)
        if isinstance(entry, np.ndarray):
            self._vectors.move_to_end(key)
            return entry
        loop = asyncio.get_running_loop()
        if entry is None or entry.get_loop() is not loop:
            entry = loop.run_in_executor(None, model.embed_query, text)
            entry.add_done_callback(lambda done: self._keep(key, done))
            self._vectors[key] = entry
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return entry

    @staticmethod
    async def wait(started: Vectors | asyncio.Future[Vectors]) -> Vectors:
        """What `start` gave, as a vector (a caller cancelled leaves the embedding for others)."""
        return started if isinstance(started, np.ndarray) else await asyncio.shield(started)

    def _keep(self, key: tuple[str, str], done: asyncio.Future[Vectors]) -> None:
        """A finished embedding is kept as its vector (any event loop may read it); a failed
        one is forgotten, so the next caller tries again."""
        if self._vectors.get(key) is not done:
            return
        if done.cancelled() or done.exception() is not None:
            del self._vectors[key]
        else:
            self._vectors[key] = done.result()


QUERY_VECTORS = QueryVectors()
