"""The `VectorStore` of one user's source in the PostgreSQL item store: its SQL is `vectors.py`'s
(pgvector's HNSW index, or an exact scan without the extension or after it crashed).

A search's coverage is remembered while the source's generation stays the same (moved by every
write; one row read instead of counting every chunk and vector, which grows with the source:
`docs/performance.md`, "PostgreSQL"). That row is not read either while the generation this
process last saw (the statistics every search reads, `store/stats.index_sizes`) is the one the
coverage was counted at: a write by another process is then seen one search later. At most
`COVERAGE_TTL_S` seconds once complete and `BUILDING_TTL_S` while not (vectors arrive without
the generation moving: the percent may lag that long). Writing vectors forgets it. A background
embedding run holds a session advisory lock per user and source: another process (a second
server on the same database) skips what one is embedding.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from ...vector_store import Coverage, DenseHits, MissingChunk, Vectors, VectorStore
from ..pool import PgDatabase, seen_generation
from . import vectors

COVERAGE_KEY = "pg_dense_complete"
"""Where each (user, source)'s coverage is kept in the pool's caches."""
COVERAGE_TTL_S = 30.0
BUILDING_TTL_S = 5.0
LOCK_SQL = "SELECT pg_try_advisory_lock(hashtext('knowledge_embedding'), hashtext(%s)) AS held"
UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtext('knowledge_embedding'), hashtext(%s))"


class PgVectorStore:
    """`user_id`'s vectors of `source` in the PostgreSQL store `pg`."""

    filters = False
    """The fused page is read without item filters here yet: a search with filters is lexical."""

    def __init__(self, pg: PgDatabase, user_id: str, source: str) -> None:
        self.pg = pg
        self.user_id = user_id
        self.source = source

    @property
    def key(self) -> str:
        return f"{self.user_id}/{self.source}"

    @property
    def caches(self) -> dict[str, Any]:
        return self.pg.caches

    async def coverage(self) -> Coverage:
        return await vectors.coverage(self.pg, self.user_id, self.source)

    async def stamp(self) -> tuple[Any, ...]:
        return await vectors.stamp(self.pg, self.user_id, self.source)

    async def look(self) -> tuple[Coverage, bool]:
        known: dict[tuple[str, str], tuple[tuple[Any, ...], float, Coverage]]
        known = self.caches.setdefault(COVERAGE_KEY, {})
        key = (self.user_id, self.source)
        now = time.monotonic()
        held = known.get(key)
        if held is not None and now - held[1] >= (COVERAGE_TTL_S if held[2].complete else BUILDING_TTL_S):
            held = None  # expired
        if held is not None and held[0] == seen_generation(self.pg, self.user_id, self.source):
            return held[2], True  # no write seen since: no round trip
        stamp = await self.stamp()
        if held is not None and held[0] == stamp:
            return held[2], True
        cover = await self.coverage()
        known[key] = (stamp, now, cover)
        return cover, True

    async def nearest(self, query: Vectors, want: int) -> DenseHits:
        found = await vectors.nearest(self.pg, self.user_id, self.source, query, want)
        return _hits(found, query)

    async def cosines(self, hits: DenseHits, item_rowids: list[int]) -> None:
        unknown = hits.unknown(item_rowids)
        found = await vectors.cosines(self.pg, self.user_id, self.source, hits.query, unknown)
        hits.add(_hits(found, hits.query))

    async def missing(self, after: int, limit: int) -> list[MissingChunk]:
        rows = await vectors.missing(self.pg, self.user_id, self.source, after, limit)
        return [MissingChunk(int(r[0]), int(r[1]), r[2], r[3]) for r in rows]

    async def known(self, hashes: list[str]) -> set[str]:
        return set()  # vectors are stored per chunk here, not per text

    async def write(self, new: dict[str, Vectors], chunks: list[tuple[int, int, str]]) -> None:
        batch = [(chunk, item, new[text]) for chunk, item, text in chunks]
        await vectors.write_batch(self.pg, self.user_id, self.source, batch)
        self.caches.get(COVERAGE_KEY, {}).pop((self.user_id, self.source), None)

    async def finish(self) -> None:
        return None  # a chunk's vectors go with it

    @asynccontextmanager
    async def embedding(self) -> AsyncIterator[VectorStore | None]:
        """This store while this process holds the source's embedding lock (None: another does)."""
        async with self.pg.pool.connection() as lock:
            held = await (await lock.execute(LOCK_SQL, (self.key,))).fetchone()
            if not held or not held[0]:
                yield None
                return
            try:
                yield self
            finally:
                await lock.execute(UNLOCK_SQL, (self.key,))


def _hits(found: list[vectors.Nearest], query: Vectors) -> DenseHits:
    return DenseHits.of([n.item for n in found], [n.cosine for n in found], [n.chunk for n in found], query)
