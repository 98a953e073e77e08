"""Embeddings built in the background while the server serves (`embed_in_background`).

The server tells the worker each time a source database is used (`notice`); at the first use
of a database, and again at most every `recheck_s` seconds of use, the worker looks at it on a
connection of its own: when chunks lack vectors it embeds them through `dense/indexing` (each
batch committed on its own, so a stop or a kill loses nothing already done). One database at a
time, one thread for the whole process (the model's own threads: 1), small batches and a
pause after each: searches keep the other core and never wait for the worker, which writes on
its own connection (WAL: readers see each committed batch). `stop()` ends it between two
batches. Only counts are logged, never a text.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from loguru import logger

from ..storage.db import Database, Migration, open_database
from .dense import vectors
from .dense.embedder import Embedder, embedder
from .dense.indexing import EmbedReport, Pacing, embed_missing

RECHECK_S = 30.0
"""At most one look per database this often (a count of chunks and of chunks with vectors)."""
BATCH = 8
PAUSE_S = 0.05
MODEL_BATCH = 4
"""Windows per run of the model: its peak memory grows with it (about 0.5 GB at 16)."""
STOP_S = 30.0
"""How long `stop` waits for the batch being embedded before cancelling the worker."""
KEY = "dense_background"
"""Where a database used by the server keeps its worker (`db.caches`): `building` reads it."""

ModelLoader = Callable[[], Embedder | None]


def background_model() -> Embedder | None:
    """The installed model on one thread of its own (the bundled MiniLM loaded again with one
    intra-op thread, a few windows a run and no memory arena, so its memory stays small; another
    embedder as it is); None without one."""
    model = embedder()
    if model is None:
        return None
    from .dense.minilm import MiniLMEmbedder

    if not isinstance(model, MiniLMEmbedder):
        return model
    own = MiniLMEmbedder.load(threads=1, arena=False)
    own.batch = MODEL_BATCH
    return own


def building(db: Database) -> bool:
    """Whether a background worker builds this database's vectors."""
    worker = db.caches.get(KEY)
    return isinstance(worker, BackgroundIndexer) and worker.running


class BackgroundIndexer:
    """The process's one embedding worker: a queue of databases, looked at one at a time."""

    def __init__(
        self,
        model: ModelLoader = background_model,
        *,
        recheck_s: float = RECHECK_S,
        batch: int = BATCH,
        pause_s: float = PAUSE_S,
    ) -> None:
        self._load = model
        self._model: Embedder | None = None
        self.recheck_s, self.batch, self.pause_s = recheck_s, batch, pause_s
        self._queue: dict[Path, tuple[str, Sequence[Migration]]] = {}
        self._looked: dict[Path, float] = {}
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="knowledge-embed")
        self.reports: dict[Path, EmbedReport] = {}
        """The last run's report per database (counts only)."""

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done() and not self._stopping

    def start(self) -> None:
        """Start the worker on the running event loop (it idles until a database is noticed)."""
        if self._task is None and not self._stopping:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="background-embedding")

    def notice(
        self, db: Database, table: str, migrations: Sequence[Migration], *, force: bool = False
    ) -> None:
        """A request used `db`: queue it for a look unless it had one in the last `recheck_s`
        (`force`: it was just written, e.g. by `serve --watch`; look again now)."""
        if not self.running:
            return
        db.caches[KEY] = self
        now = time.monotonic()
        last = self._looked.get(db.path)
        if last is not None and now - last < self.recheck_s and not force:
            return
        self._looked[db.path] = now
        self._queue[db.path] = (table, migrations)
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
            path = next(iter(self._queue))
            table, migrations = self._queue.pop(path)
            try:
                await self._index(path, table, migrations)
            except Exception as error:  # the next look tries again; searches stay lexical
                logger.warning("background embedding of {} stopped: {}", table, type(error).__name__)
            self._looked[path] = time.monotonic()

    async def _index(self, path: Path, table: str, migrations: Sequence[Migration]) -> None:
        if self._model is None:
            self._model = await asyncio.get_running_loop().run_in_executor(self._thread, self._load)
            if self._model is None:
                self._stopping = True  # no model: nothing to build, searches say so
                return
        db = await open_database(path, migrations)
        try:
            cover = await vectors.coverage(db, table)
            if cover.complete:
                return
            logger.info(
                "embedding {} of user {} in the background: {} of {} chunks without vectors",
                table, path.parent.name, cover.chunks - cover.embedded, cover.chunks,
            )  # fmt: skip
            pacing = Pacing(self._thread, self.pause_s, lambda: self._stopping)
            report = await embed_missing(db, table, self._model, batch=self.batch, pacing=pacing)
            self.reports[path] = report
            end = " (stopped)" if report.stopped else ""
            logger.info(
                "embedded {} of user {}: {} chunk(s) given vectors, {} text(s) embedded{}",
                table, path.parent.name, report.linked, report.embedded, end,
            )  # fmt: skip
        finally:
            await db.close()
