"""Embeddings built in the background while the server serves (`embed_in_background`).

The server tells the worker each time a source's vectors are used (`notice`, with the source's
`VectorStore`: a SQLite source database, or one user's source in the PostgreSQL item store); at
the first use, and again at most every `recheck_s` seconds of use, the worker looks at it on a
connection of its own (`VectorStore.embedding`): when chunks lack vectors it embeds them through
`dense/indexing` (each batch committed on its own, so a stop or a kill loses nothing already
done). One source at a time, one thread for the whole process. While requests are being served
(one in the last `IDLE_S` seconds: `notice` notes each) it takes small batches and pauses after
each; once none came for `IDLE_S` it embeds `IDLE_BATCH` texts a batch without a pause, and the
next request makes the batch after the running one small again. The model runs `minilm.BATCH`
windows at a time either way, and a search's query is embedded on its own thread beside a
batch: it never waits for the worker. The worker embeds with the
searches' model (one session in the process), taken only when a look finds chunks without
vectors and let go once no source waits.
On PostgreSQL a run holds a lock per user and source: another process (a second server on the
same database) skips what one is embedding. `stop()` ends it between two batches. Only
counts are logged, never a text.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from loguru import logger

from ..storage.vector_store import VectorStore
from .dense.embedder import embedder
from .dense.indexing import EmbedReport, Pacing, embed_missing
from .dense.model import Embedder
from .dense.runtime.heap import give_back

RECHECK_S = 30.0
"""At most one look per database this often (a count of chunks and of chunks with vectors)."""
BATCH = 8
"""Texts a batch while requests are being served."""
PAUSE_S = 0.05
"""Seconds after each batch while requests are being served."""
IDLE_S = 5.0
"""Seconds without a request after which the worker embeds at full speed."""
IDLE_BATCH = 32
"""Texts a batch while no request is being served (no pause): ~55 SciFact windows, a few
seconds of the model (`docs/performance.md`, "The background worker at full speed when idle")."""
STOP_S = 30.0
"""How long `stop` waits for the batch being embedded before cancelling the worker."""
KEY = "dense_background"
"""Where a database used by the server keeps its worker (`db.caches`): `building` reads it."""

ModelLoader = Callable[[], Embedder | None]


def background_model() -> Embedder | None:
    """The installed model, the one the searches use (one session, one set of weights in the
    process: a second session cost ~95 MB of weights and ~250 MB more while it was built,
    `docs/performance.md`, "Memory of the server process"); None without one. A search's query
    is embedded beside the worker's batches, each run on its caller's thread."""
    return embedder()


def building(store: VectorStore) -> bool:
    """Whether a background worker builds this store's vectors."""
    worker = store.caches.get(KEY)
    return isinstance(worker, BackgroundIndexer) and worker.running


class BackgroundIndexer:
    """The process's one embedding worker: a queue of sources' vector stores, looked at one at a
    time."""

    def __init__(
        self,
        model: ModelLoader = background_model,
        *,
        recheck_s: float = RECHECK_S,
        batch: int = BATCH,
        pause_s: float = PAUSE_S,
        idle_s: float = IDLE_S,
    ) -> None:
        self._load = model
        self._model: Embedder | None = None
        self.recheck_s, self.batch, self.pause_s, self.idle_s = recheck_s, batch, pause_s, idle_s
        self.served = -float("inf")
        """When a request last used a source (`time.monotonic()`; `notice` sets it)."""
        self._queue: dict[Path | str, VectorStore] = {}
        self._looked: dict[Path | str, float] = {}
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="knowledge-embed")
        self.reports: dict[Path | str, EmbedReport] = {}
        """The last run's report per database (counts only)."""
        self.looks = 0
        """How many looks at a source have ended (whether or not they embedded anything)."""

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done() and not self._stopping

    def busy(self) -> bool:
        """Whether requests are being served: one came in the last `idle_s` seconds."""
        return time.monotonic() - self.served < self.idle_s

    @property
    def holding(self) -> bool:
        """Whether the worker holds its model now (only while a source waits or is embedded)."""
        return self._model is not None

    def start(self) -> None:
        """Start the worker on the running event loop (it idles until a database is noticed)."""
        if self._task is None and not self._stopping:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="background-embedding")

    def notice(self, store: VectorStore, *, force: bool = False) -> None:
        """A request used `store`: queue it for a look unless it had one in the last `recheck_s`
        (`force`: it was just written, e.g. by `serve --watch`; look again now, and it is no
        request: the worker's pace stays as it is)."""
        now = time.monotonic()
        if not force:
            self.served = now
        if not self.running:
            return
        store.caches[KEY] = self
        last = self._looked.get(store.key)
        if last is not None and now - last < self.recheck_s and not force:
            return
        self._looked[store.key] = now
        self._queue[store.key] = store
        assert self._wake is not None
        self._wake.set()

    async def stop(self) -> None:
        """End the worker between two batches (cancelled if a batch outlasts `STOP_S`)."""
        self._stopping = True
        if self._wake is not None:
            self._wake.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), STOP_S)
            except TimeoutError:
                self._task.cancel()
        self._thread.shutdown(wait=False, cancel_futures=True)

    async def _run(self) -> None:
        assert self._wake is not None
        while not self._stopping:
            if not self._queue:
                self._wake.clear()
                await self._wake.wait()
                continue
            key = next(iter(self._queue))
            store = self._queue.pop(key)
            try:
                await self._index(store)
            except Exception as error:  # the next look tries again; searches stay lexical
                logger.warning("background embedding of {} stopped: {}", _named(key), type(error).__name__)
            self._looked[key] = time.monotonic()
            self.looks += 1
            if not self._queue and self._model is not None and not self._stopping:
                await asyncio.get_running_loop().run_in_executor(self._thread, self._release)

    def _release(self) -> None:
        """Let the model go and give its memory back (on the worker's thread, between runs)."""
        self._model = None
        give_back()

    async def _ready(self) -> Embedder | None:
        """The model, loaded on the worker's thread at first use (None: none installed)."""
        if self._model is None:
            self._model = await asyncio.get_running_loop().run_in_executor(self._thread, self._load)
            if self._model is None:
                self._stopping = True  # no model: nothing to build, searches say so
        return self._model

    async def _index(self, store: VectorStore) -> None:
        async with store.embedding() as own:
            if own is None:
                return  # another process embeds this source now
            cover = await own.coverage()
            if cover.complete:
                return
            model = await self._ready()
            if model is None:
                return
            logger.info(
                "embedding {} in the background: {} of {} chunks without vectors",
                _named(store.key), cover.chunks - cover.embedded, cover.chunks,
            )  # fmt: skip
            pacing = Pacing(self._thread, self.pause_s, lambda: self._stopping, self.busy, IDLE_BATCH)
            report = await embed_missing(own, model, batch=self.batch, pacing=pacing)
            self.reports[store.key] = report
            end = " (stopped)" if report.stopped else ""
            logger.info(
                "embedded {}: {} chunk(s) given vectors, {} text(s) embedded{}",
                _named(store.key), report.linked, report.embedded, end,
            )  # fmt: skip


def _named(key: Path | str) -> str:
    """A source of a user as the log names it: `notes of user alice` (no path, no text)."""
    if isinstance(key, Path):
        return f"{key.stem} of user {key.parent.name}"
    user, _, source = key.rpartition("/")
    return f"{source} of user {user}"
