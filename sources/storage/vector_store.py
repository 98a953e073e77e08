"""One user's one source's chunk vectors, as the dense stages see them (`VectorStore`).

The dense retriever, the hybrid fuser and the embedding loop are written once against this
protocol. Two stores implement it, each with its own SQL: the SQLite source database
(`search/dense/sqlite/`: an exact numpy index, or a usearch approximate index for a
large source) and the PostgreSQL item store (`storage/postgres/embeddings/store.py`: pgvector
or an exact scan). `search/dense/stores.vector_store` picks one.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]
"""Unit-length float32 rows, one per text window (or one vector, a query's)."""
Floats = npt.NDArray[np.float32]
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Coverage:
    """A source's chunks, and how many of them have their vectors."""

    chunks: int
    embedded: int

    @property
    def complete(self) -> bool:
        return self.embedded >= self.chunks

    @property
    def percent(self) -> int:
        return 100 if not self.chunks else min(100, self.embedded * 100 // self.chunks)


class MissingChunk(NamedTuple):
    """A chunk without vectors: what embedding reads of it."""

    chunk: int
    item: int
    title: str
    body: str


@dataclass
class DenseHits:
    """One query's dense answer, the items by position: the nearest first (`VectorStore.nearest`),
    then those whose cosines were asked for (`VectorStore.cosines`); each item's best window's
    cosine and that window's chunk."""

    items: Ints
    best: Floats
    chunks: Ints
    query: Vectors = field(default_factory=lambda: np.zeros(0, np.float32))
    others: Callable[[list[int]], DenseHits] | None = None
    """Other items' best cosines and chunks from what the search holds in memory (the SQLite
    store's indexes); None: the store reads them (`VectorStore.cosines`)."""

    @classmethod
    def of(cls, items: Any, best: Any, chunks: Any, query: Vectors | None = None) -> DenseHits:
        return cls(
            np.asarray(items, dtype=np.int64),
            np.asarray(best, dtype=np.float32),
            np.asarray(chunks, dtype=np.int64),
            np.zeros(0, np.float32) if query is None else query,
        )

    @classmethod
    def empty(cls) -> DenseHits:
        return cls.of([], [], [])

    def add(self, more: DenseHits) -> None:
        """Append the items of `more` not known yet."""
        known = set(self.items.tolist())
        keep = np.array([int(i) not in known for i in more.items.tolist()], dtype=bool)
        if len(keep) and keep.any():
            self.items = np.concatenate([self.items, more.items[keep]])
            self.best = np.concatenate([self.best, more.best[keep]])
            self.chunks = np.concatenate([self.chunks, more.chunks[keep]])

    def unknown(self, item_rowids: list[int]) -> list[int]:
        """Those of these items not known yet, in order, once each."""
        known = set(self.items.tolist())
        return sorted({i for i in item_rowids if i not in known})

    def positions(self, item_rowids: list[int]) -> dict[int, int]:
        """Where each of these items is (items without vectors are left out)."""
        known = {int(item): n for n, item in enumerate(self.items.tolist())}
        return {i: known[i] for i in item_rowids if i in known}


class VectorStore(Protocol):
    """The vectors of one user's one source."""

    @property
    def key(self) -> Path | str:
        """Which source of which user this is (the background worker's queue key)."""
        ...

    @property
    def caches(self) -> dict[str, Any]:
        """The database's caches (`background.building` reads its worker there)."""
        ...

    filters: bool
    """Whether a dense search may have item filters (the page read applies them)."""

    async def coverage(self) -> Coverage:
        """How many of the source's chunks have their vectors, counted now."""
        ...

    async def stamp(self) -> tuple[Any, ...]:
        """Changes when the source's chunks or vectors change."""
        ...

    async def look(self) -> tuple[Coverage, bool]:
        """The coverage searches go by (remembered while the stamp stays), and whether `nearest`
        can answer now (not while a large source's first approximate index is built)."""
        ...

    async def nearest(self, query: Vectors, want: int) -> DenseHits:
        """The (about) `want` items whose best window is nearest `query`, nearest first."""
        ...

    async def cosines(self, hits: DenseHits, item_rowids: list[int]) -> None:
        """Add to `hits` these items' best cosines with the query that gave them (items without
        vectors are left out)."""
        ...

    async def missing(self, after: int, limit: int) -> list[MissingChunk]:
        """Up to `limit` chunks past id `after` without vectors, by id."""
        ...

    async def known(self, hashes: list[str]) -> set[str]:
        """Which of these text hashes already have vectors to link to (content-addressed)."""
        ...

    async def write(self, new: dict[str, Vectors], chunks: list[tuple[int, int, str]]) -> None:
        """Store the windows of `new` texts (by text hash) and which text each (chunk, item)
        has, in one transaction; a chunk's text is in `new` unless `known` said it was there."""
        ...

    async def finish(self) -> None:
        """An embedding run ended: drop what no chunk uses any more."""
        ...

    def embedding(self) -> AbstractAsyncContextManager[VectorStore | None]:
        """This store for a background embedding run (its own connection, or a lock another
        process may hold: then None)."""
        ...
