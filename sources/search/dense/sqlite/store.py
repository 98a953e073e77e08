"""The `VectorStore` of a SQLite source database: its SQL is `vectors.py`'s, its searches the
exact numpy index or, for a large source, the approximate usearch index (`index.py`, `ann/`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from ....storage.db import Database, Migration, open_database
from ....storage.vector_store import Coverage, DenseHits, MissingChunk, Vectors, VectorStore
from ...request import SearchedSource
from ..ann import hits as ann_hits
from ..ann.store import AnnIndex
from . import vectors
from .index import DenseIndex, dense_indexes


class SqliteVectorStore:
    """The vectors of `source` in its database `db` (one user's, one source's)."""

    filters = True

    def __init__(self, db: Database, source: SearchedSource, migrations: Sequence[Migration] = ()) -> None:
        self.db = db
        self.source = source
        self.table = source.name
        self.migrations = migrations
        """The source's migrations: a background run opens the database again with them."""
        self._index: DenseIndex | AnnIndex | None = None

    @property
    def key(self) -> Path:
        return self.db.path

    @property
    def caches(self) -> dict[str, Any]:
        return self.db.caches

    async def coverage(self) -> Coverage:
        return await vectors.coverage(self.db, self.table)

    async def stamp(self) -> tuple[Any, ...]:
        return await vectors.stamp(self.db, self.table)

    async def look(self) -> tuple[Coverage, bool]:
        indexes = dense_indexes(self.db, self.source)
        self._index = await indexes.current()
        return indexes.coverage, self._index is not None

    async def nearest(self, query: Vectors, want: int) -> DenseHits:
        index = self._index or await dense_indexes(self.db, self.source).current()
        if isinstance(index, DenseIndex):
            return index.nearest(query, want)
        if index is None:
            return DenseHits.empty()
        return ann_hits.search(index, query, want)

    async def cosines(self, hits: DenseHits, item_rowids: list[int]) -> None:
        unknown = hits.unknown(item_rowids)
        if unknown and hits.others is not None:
            hits.add(hits.others(unknown))

    async def missing(self, after: int, limit: int) -> list[MissingChunk]:
        rows = await vectors.missing(self.db, self.table, after, limit)
        return [MissingChunk(int(r[0]), int(r[3]), r[1], r[2]) for r in rows]

    async def known(self, hashes: list[str]) -> set[str]:
        return await vectors.known(self.db, self.table, hashes)

    async def write(self, new: dict[str, Vectors], chunks: list[tuple[int, int, str]]) -> None:
        await vectors.write_batch(self.db, self.table, new, [(c, h) for c, _, h in chunks])

    async def finish(self) -> None:
        await vectors.drop_unused(self.db, self.table)

    @asynccontextmanager
    async def embedding(self) -> AsyncIterator[VectorStore | None]:
        """The same source on a connection of its own (WAL: searches read each committed batch)."""
        db = await open_database(self.db.path, self.migrations)
        try:
            yield SqliteVectorStore(db, self.source, self.migrations)
        finally:
            await db.close()
