"""A source's dense index: its vectors in memory for exact cosine search with numpy, or for a
large source (`ann.min_windows()` windows or more) its approximate index (`ann/store.py`).

Loaded once per database and kept until a chunk gains or loses vectors (checked only after
something was committed: `PRAGMA data_version`, probed on the memory copy's connection). The
windows are kept sorted by item, so one matrix product and one `maximum.reduceat` give every
item its best window's cosine (exact; what it costs: `docs/performance.md`, "Dense search").
While vectors are being added neither is reloaded (searches are lexical until the source is
complete); then the exact index is read again, or the approximate one takes in the difference
in a worker thread while searches go on with it as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....storage.db import Database
from ....storage.vector_store import Coverage, DenseHits, Floats, Ints
from ...lexical.memory import memory_indexes
from ...request import SearchedSource
from ..ann import store as ann
from ..ann.store import AnnIndex
from ..ann.synced import ApproximateIndex
from ..embedder import Vectors
from . import vectors


@dataclass
class DenseIndex:
    matrix: Vectors
    """Every window's unit vector, grouped by item."""
    chunk_ids: Ints
    """The chunk of each window."""
    items: Ints
    """Each item's rowid, in the matrix's order."""
    starts: Ints
    """Where each item's windows start in the matrix."""
    coverage: Coverage
    stamp: tuple[Any, ...] = ()

    def search(self, query: Vectors) -> ExactHits:
        return ExactHits(self, query, *self.cosines(query))

    def nearest(self, query: Vectors, want: int) -> DenseHits:
        """The `want` items whose best window is nearest `query`, nearest first; the others'
        cosines from this search's (`DenseHits.others`)."""
        exact = self.search(query)
        hits = exact.hits(best_positions(exact.best, want))
        hits.others = lambda rowids: exact.hits(list(self.positions(rowids).values()))
        return hits

    def cosines(self, query: Vectors) -> tuple[Floats, Floats]:
        """Every window's cosine with `query`, and every item's best (in `items` order)."""
        if not len(self.items):
            return np.zeros(0, np.float32), np.zeros(0, np.float32)
        # einsum's own loop, not BLAS: a matrix-vector product gains nothing from BLAS threads,
        # which on a busy machine cost more waiting for each other than they compute
        # (docs/performance.md, "Dense search").
        cosines: Floats = np.einsum("ij,j->i", self.matrix, query)
        return cosines, np.maximum.reduceat(cosines, self.starts)

    def positions(self, item_rowids: list[int]) -> dict[int, int]:
        """Where each of these items is in `items` (items without vectors are left out)."""
        wanted = np.array(item_rowids, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.items, wanted), max(0, len(self.items) - 1))
        found = self.items[at] == wanted if len(self.items) else np.zeros(len(wanted), bool)
        return {int(r): int(p) for r, p, ok in zip(wanted, at, found, strict=True) if ok}

    def best_chunk(self, position: int, cosines: Floats) -> int:
        """The chunk of the item at `position` whose window is closest to the query."""
        start = int(self.starts[position])
        end = int(self.starts[position + 1]) if position + 1 < len(self.starts) else len(cosines)
        return int(self.chunk_ids[start + int(np.argmax(cosines[start:end]))])


def build(rows: list[Any], coverage: Coverage, stamp: tuple[Any, ...]) -> DenseIndex:
    """The index of `(chunk_id, item_rowid, windows, vectors)` rows."""
    rows = sorted(rows, key=lambda r: (r[1], r[0]))
    parts = [np.frombuffer(r[3], dtype=np.float32).reshape(int(r[2]), -1) for r in rows]
    matrix = np.vstack(parts) if parts else np.zeros((0, 384), np.float32)
    counts = np.array([int(r[2]) for r in rows], dtype=np.int64)
    chunk_ids = np.repeat(np.array([r[0] for r in rows], dtype=np.int64), counts)
    item_of_window = np.repeat(np.array([r[1] for r in rows], dtype=np.int64), counts)
    new_item = np.ones(len(item_of_window), dtype=bool)
    new_item[1:] = item_of_window[1:] != item_of_window[:-1]
    starts = np.flatnonzero(new_item).astype(np.int64)
    return DenseIndex(matrix, chunk_ids, item_of_window[starts], starts, coverage, stamp)


@dataclass
class ExactHits:
    """One query's cosines over an exact index: every window's and every item's best."""

    index: DenseIndex
    query: Vectors
    cosines: Floats
    best: Floats

    @property
    def items(self) -> Ints:
        return self.index.items

    def hits(self, positions: list[int]) -> DenseHits:
        """The items at these positions, with their best cosines and chunks."""
        at = np.array(positions, dtype=np.int64)
        chunks = [self.index.best_chunk(p, self.cosines) for p in positions]
        return DenseHits.of(self.index.items[at], self.best[at], chunks, self.query)


def best_positions(scores: Floats, n: int) -> list[int]:
    """The positions of the `n` highest scores, highest first (ties: lower position first)."""
    cut = np.argpartition(-scores, n - 1)[:n] if len(scores) > n else np.arange(len(scores))
    return [int(p) for p in cut[np.lexsort((cut, -scores[cut]))]]


@dataclass
class DenseIndexes:
    """The dense index of one source database: exact (in memory) or approximate (`ann/`,
    from `ann.min_windows()` windows on), followed as its vectors change."""

    db: Database
    source: SearchedSource
    index: DenseIndex | None = None
    version: int | None = None
    coverage: Coverage = field(default_factory=lambda: Coverage(0, 0))
    approximate: ApproximateIndex | None = None
    """The large source's approximate index (None: the source is searched exactly)."""

    async def current(self) -> DenseIndex | AnnIndex | None:
        """The index to search now; None while a large source's first approximate index is
        being built."""
        version = memory_indexes(self.db, self.source).data_version()
        if version is None or version != self.version:
            await self._look(version)
            # Only now: a search arriving meanwhile looks too (it must not find no index).
            self.version = version
        if self.approximate is not None:
            return self.approximate.usable()
        assert self.index is not None
        return self.index

    async def ready(self) -> DenseIndex | AnnIndex | None:
        """The index once the approximate index's syncs under way have ended (tests, benches)."""
        index = await self.current()
        return await self.approximate.wait() if self.approximate is not None else index

    async def _look(self, version: int | None) -> None:
        table = self.source.name
        stamp = await vectors.stamp(self.db, table)
        self.coverage = await vectors.coverage(self.db, table)
        known = (
            self.approximate.stamp
            if self.approximate is not None
            else (self.index.stamp if self.index else None)
        )
        if stamp == known:
            return
        if self.approximate is None and (
            version is None or await vectors.windows(self.db, table) < ann.min_windows()
        ):
            if self.index is None or (self.coverage.complete and stamp != self.index.stamp):
                # While vectors are still being added (a background worker commits a batch every
                # second or two) the exact index is not reloaded: that is left for when the
                # source is complete.
                rows = (
                    await self.db.fetchall(vectors.sql(vectors.LOAD_SQL, table))
                    if self.coverage.complete
                    else []
                )
                self.index = build(rows, self.coverage, stamp if self.coverage.complete else ())
            return
        self.index = None
        if self.approximate is None:
            self.approximate = ApproximateIndex(self.db.path, table)
        if self.coverage.complete:
            self.approximate.follow(stamp)


def dense_indexes(db: Database, source: SearchedSource) -> DenseIndexes:
    indexes = db.caches.get("dense_index")
    if indexes is None:
        indexes = db.caches["dense_index"] = DenseIndexes(db, source)
    return indexes  # type: ignore[no-any-return]
