"""Compute the vectors a source's chunks are missing, a batch at a time (`knowledge-mcp embed`,
`import --embed`, and the server's background worker, `background.py`), into either store
(`storage/vector_store.VectorStore`).

Each batch is committed on its own: a run killed half-way keeps every batch it finished and
the next run starts from the chunks still missing. A paced run (`Pacing`, the background
worker) takes small batches and pauses after each only while requests are being served. Texts
that already have vectors (the same text under another chunk, an unchanged re-import, where the
store keeps vectors by text) are linked, not embedded again, and a text repeated within a batch
is embedded once. The model runs on a worker thread (the default executor, or the one given),
so the event loop (a server's searches) is not held; a run asked to stop (`stop`) ends between
two batches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

from ...storage.vector_store import MissingChunk, Vectors, VectorStore
from .model import Embedder
from .sqlite.vectors import embedded_text, text_hash

BATCH_CHUNKS = 32

Progress = Callable[[int, int], None]
"""Told (chunks with vectors, chunks) after each batch."""


@dataclass
class EmbedReport:
    chunks: int = 0
    """Chunks of the source."""
    embedded: int = 0
    """Texts embedded by this run."""
    linked: int = 0
    """Chunks given vectors this run (embedded, or already known by their text)."""
    windows: int = 0
    """Model windows computed by this run."""
    stopped: bool = False
    """The run was asked to stop before every chunk had its vectors."""


@dataclass(frozen=True)
class Pacing:
    """How a run shares the machine: its thread, small batches and a pause after each while
    requests are being served (`busy`), when to stop."""

    executor: Executor | None = None
    """Where the model runs (None: the event loop's default executor)."""
    pause_s: float = 0.0
    """Seconds to wait after each committed batch while `busy` (the CPU left to searches)."""
    stop: Callable[[], bool] | None = None
    """Asked before each batch; True ends the run there."""
    busy: Callable[[], bool] | None = None
    """Asked before each batch: whether requests are being served now. None: always paced."""
    idle_batch: int = 0
    """Texts a batch while not `busy` (no pause then); 0: the run's own batch."""

    def step(self, batch: int) -> tuple[int, float]:
        """The next batch's size and the pause after it: `batch` and `pause_s` while requests
        are being served, else `idle_batch` (when larger) and no pause."""
        if self.busy is None or self.busy():
            return batch, self.pause_s
        return max(batch, self.idle_batch), 0.0


async def embed_missing(
    store: VectorStore,
    model: Embedder,
    progress: Progress | None = None,
    batch: int = BATCH_CHUNKS,
    pacing: Pacing | None = None,
) -> EmbedReport:
    """Give every chunk of the store's source its vectors; only texts without any are embedded."""
    pacing = pacing or Pacing()
    cover = await store.coverage()
    report = EmbedReport(chunks=cover.chunks)
    done, after = cover.embedded, 0
    while True:
        if pacing.stop is not None and pacing.stop():
            report.stopped = True
            return report
        size, pause_s = pacing.step(batch)
        rows = await store.missing(after, size)
        if not rows:
            break
        after = rows[-1].chunk
        await _embed_batch(store, model, rows, report, pacing.executor)
        done += len(rows)
        if progress is not None:
            progress(min(done, cover.chunks), cover.chunks)
        if pause_s:
            await asyncio.sleep(pause_s)
    await store.finish()
    return report


async def _embed_batch(
    store: VectorStore,
    model: Embedder,
    rows: list[MissingChunk],
    report: EmbedReport,
    executor: Executor | None,
) -> None:
    """Embed the texts of `rows` not stored yet, and give every chunk its text's vectors."""
    texts = {r.chunk: embedded_text(r.title, r.body) for r in rows}
    hashes = {chunk: text_hash(model.model_id, t) for chunk, t in texts.items()}
    have = await store.known(sorted(set(hashes.values())))
    todo = {h: texts[c] for c, h in hashes.items() if h not in have}
    new: dict[str, Vectors] = {}
    if todo:
        loop = asyncio.get_running_loop()
        computed = await loop.run_in_executor(executor, model.embed_windows, list(todo.values()))
        new = dict(zip(todo, computed, strict=True))
    await store.write(new, [(r.chunk, r.item, hashes[r.chunk]) for r in rows])
    report.embedded += len(new)
    report.windows += sum(len(v) for v in new.values())
    report.linked += len(rows)
