"""Embeddings built in the background while the server serves (`embed_in_background`).

The server tells the worker each time a source database is used (`notice`); at the first use
of a database, and again at most every `recheck_s` seconds of use, the worker looks at it on a
connection of its own: when chunks lack vectors it embeds them through `dense/indexing` (each
batch committed on its own, so a stop or a kill loses nothing already done). One database at a
time, one thread for the whole process (the model's own threads: 1), small batches and a
pause after each: searches keep the other core and never wait for the worker, which writes on
its own connection (WAL: readers see each committed batch). `stop()` ends it between two
batches. Only counts are logged, never a text.

With the PostgreSQL item store the server tells it each user's source it reads
(`notice_pg`), and the worker embeds into PostgreSQL (`dense/pg/indexing.py`) the same way,
holding a session advisory lock per user and source while it does: another process (a second
server on the same database) skips what one is embedding.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loguru import logger

from ..storage.db import Database, Migration, open_database
from .dense import vectors
from .dense.embedder import Embedder, embedder
from .dense.indexing import EmbedReport, Pacing, embed_missing

if TYPE_CHECKING:
    from ..storage.postgres.pool import PgDatabase

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
LOCK_SQL = "SELECT pg_try_advisory_lock(hashtext('knowledge_embedding'), hashtext(%s)) AS held"
UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtext('knowledge_embedding'), hashtext(%s))"


@dataclass(frozen=True)
class PgSource:
    """One user's source in the PostgreSQL item store, to embed."""

    pg: PgDatabase
    user_id: str
    source: str

    @property
    def key(self) -> str:
        return f"{self.user_id}/{self.source}"


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


def building(db: Database | PgDatabase) -> bool:
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
        self._queue: dict[Path | str, tuple[str, Sequence[Migration]] | PgSource] = {}
        self._looked: dict[Path | str, float] = {}
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="knowledge-embed")
        self.reports: dict[Path | str, EmbedReport] = {}
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
        self._enqueue(db.path, (table, migrations), force)

    def notice_pg(self, pg: PgDatabase, user_id: str, source: str, *, force: bool = False) -> None:
        """A request read `user_id`'s `source` from the PostgreSQL item store (as `notice`)."""
        if not self.running:
            return
        pg.caches[KEY] = self
        job = PgSource(pg, user_id, source)
        self._enqueue(job.key, job, force)

    def _enqueue(self, key: Path | str, job: Any, force: bool) -> None:
        now = time.monotonic()
        last = self._looked.get(key)
        if last is not None and now - last < self.recheck_s and not force:
            return
        self._looked[key] = now
        self._queue[key] = job
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
            job = self._queue.pop(key)
            try:
                if isinstance(job, PgSource):
                    await self._index_pg(job)
                else:
                    await self._index(Path(key), *job)
            except Exception as error:  # the next look tries again; searches stay lexical
                name = job.source if isinstance(job, PgSource) else job[0]
                logger.warning("background embedding of {} stopped: {}", name, type(error).__name__)
            self._looked[key] = time.monotonic()

    async def _ready(self) -> Embedder | None:
        """The model, loaded on the worker's thread at first use (None: none installed)."""
        if self._model is None:
            self._model = await asyncio.get_running_loop().run_in_executor(self._thread, self._load)
            if self._model is None:
                self._stopping = True  # no model: nothing to build, searches say so
        return self._model

    async def _index(self, path: Path, table: str, migrations: Sequence[Migration]) -> None:
        model = await self._ready()
        if model is None:
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
            report = await embed_missing(db, table, model, batch=self.batch, pacing=pacing)
            self.reports[path] = report
            end = " (stopped)" if report.stopped else ""
            logger.info(
                "embedded {} of user {}: {} chunk(s) given vectors, {} text(s) embedded{}",
                table, path.parent.name, report.linked, report.embedded, end,
            )  # fmt: skip
        finally:
            await db.close()

    async def _index_pg(self, job: PgSource) -> None:
        from ..storage.postgres.embeddings import vectors as pg_vectors
        from .dense.pg.indexing import embed_missing_pg

        model = await self._ready()
        if model is None:
            return
        cover = await pg_vectors.coverage(job.pg, job.user_id, job.source)
        if cover.complete:
            return
        async with job.pg.pool.connection() as lock:
            held = await (await lock.execute(LOCK_SQL, (job.key,))).fetchone()
            if not held or not held[0]:
                return  # another process embeds this source now
            try:
                logger.info(
                    "embedding {} of user {} in the background (PostgreSQL): {} of {} chunks without vectors",
                    job.source, job.user_id, cover.chunks - cover.embedded, cover.chunks,
                )  # fmt: skip
                pacing = Pacing(self._thread, self.pause_s, lambda: self._stopping)
                report = await embed_missing_pg(
                    job.pg, job.user_id, job.source, model, batch=self.batch, pacing=pacing
                )
                self.reports[job.key] = report
                logger.info(
                    "embedded {} of user {}: {} chunk(s) given vectors{}",
                    job.source, job.user_id, report.linked, " (stopped)" if report.stopped else "",
                )  # fmt: skip
            finally:
                await lock.execute(UNLOCK_SQL, (job.key,))
