"""Compute the vectors a source's chunks are missing in the PostgreSQL item store, a batch at a
time (`knowledge-mcp import --embed` with `item_store = "postgresql"`, and the server's
background worker): `indexing.py`'s loop over `storage/postgres/vectors.py`.

As on SQLite each batch is committed on its own (a run killed half-way keeps what it finished,
the next run starts from the chunks still missing), the model runs on a worker thread, and a
run asked to stop ends between two batches. A chunk's text is the SQLite store's
(`vectors.embedded_text`); texts repeated within a batch are embedded once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ....storage.postgres.embeddings import vectors as pg_vectors
from ....storage.postgres.pool import PgDatabase
from ..embedder import Embedder, Vectors
from ..indexing import BATCH_CHUNKS, EmbedReport, Pacing, Progress
from ..vectors import embedded_text

COMPLETE_KEY = "pg_dense_complete"
"""Where the dense stage keeps each (user, source)'s coverage in the pool's caches."""


def forget_coverage(db: PgDatabase, user_id: str, source: str) -> None:
    """New vectors: the dense stage counts this source's coverage again on its next search."""
    db.caches.get(COMPLETE_KEY, {}).pop((user_id, source), None)


async def embed_missing_pg(
    db: PgDatabase,
    user_id: str,
    source: str,
    model: Embedder,
    progress: Progress | None = None,
    batch: int = BATCH_CHUNKS,
    pacing: Pacing | None = None,
) -> EmbedReport:
    """Give every chunk of `user_id`'s `source` its vectors."""
    pacing = pacing or Pacing()
    cover = await pg_vectors.coverage(db, user_id, source)
    report = EmbedReport(chunks=cover.chunks)
    done, after = cover.embedded, 0
    while True:
        if pacing.stop is not None and pacing.stop():
            report.stopped = True
            return report
        rows = await pg_vectors.missing(db, user_id, source, after, batch)
        if not rows:
            return report
        after = int(rows[-1][0])
        await _embed_batch(db, user_id, source, model, rows, report, pacing)
        done += len(rows)
        if progress is not None:
            progress(min(done, cover.chunks), cover.chunks)
        if pacing.pause_s:
            await asyncio.sleep(pacing.pause_s)


async def _embed_batch(
    db: PgDatabase,
    user_id: str,
    source: str,
    model: Embedder,
    rows: list[Any],
    report: EmbedReport,
    pacing: Pacing,
) -> None:
    """Embed the texts of `rows` (id, item, title, body) and store every chunk's windows."""
    texts = [embedded_text(r[2], r[3]) for r in rows]
    unique = list(dict.fromkeys(texts))
    loop = asyncio.get_running_loop()
    computed: list[Vectors] = await loop.run_in_executor(pacing.executor, model.embed_windows, unique)
    by_text = dict(zip(unique, computed, strict=True))
    chunks = [(int(r[0]), int(r[1]), by_text[t]) for r, t in zip(rows, texts, strict=True)]
    await pg_vectors.write_batch(db, user_id, source, chunks)
    forget_coverage(db, user_id, source)
    report.embedded += len(unique)
    report.windows += sum(len(v) for v in computed)
    report.linked += len(rows)
