"""The PostgreSQL item store (`item_store = "postgresql"`): the backend's `Items` there.

One pool for the process, opened and migrated at the first call that needs items, closed with
the backend. A read is a `PgStore`: the store seen as one user's items of one source. Import
runs the SQLite import's walk, skips and parsers (`runs.ImportRun`) into PostgreSQL's writer;
embedding computes the user's missing vectors into the store (`dense/indexing.embed_missing`
over its `PgVectorStore`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from knowledge_mcp.sources.notes.writing.stores import NoteStore, PgNotes
from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.search.background import BackgroundIndexer
from knowledge_mcp.sources.search.dense.embedder import Embedder
from knowledge_mcp.sources.search.dense.indexing import EmbedReport, embed_missing
from knowledge_mcp.sources.search.lexical.memory_index import MAX_CHUNKS
from knowledge_mcp.sources.storage.postgres.embeddings.store import PgVectorStore
from knowledge_mcp.sources.storage.postgres.embeddings.vectors import coverage
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, open_pg
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS
from knowledge_mcp.sources.storage.postgres.store import PgStore
from knowledge_mcp.sources.storage.postgres.store.memory import CACHE, TOTAL_MB, MemoryCopies, settled
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter
from knowledge_mcp.sources.storage.runs import ImportSummary

from ..watch.stores import PgWatched, WatchedItems

Progress = Callable[[int, int], None]


class PostgresItems:
    """Every user's items in the PostgreSQL store at `url`."""

    def __init__(
        self,
        url: str,
        data_dir: Path,
        background: BackgroundIndexer | None = None,
        memory: tuple[int, float] | None = None,
    ) -> None:
        """`memory`: small sources' copies in memory (`store/memory.py`), their largest source in
        chunks and their total in MB (None: the defaults)."""
        self.url, self.data_dir, self.background = url, data_dir, background
        self.memory = memory or (MAX_CHUNKS, TOTAL_MB)
        self._pg: PgDatabase | None = None
        self._lock = asyncio.Lock()

    async def read(self, user_id: str, source: str, path: Path) -> Any:
        """`user_id`'s items of `source` (a `PgStore`; `path`: their SQLite file's place); the
        embedding worker fills their missing vectors while serving."""
        items = PgStore(await self._open(), user_id, source, path)
        if self.background is not None:
            self.background.notice(PgVectorStore(items.pg, user_id, source))
        return items

    async def notes(self, user_id: str, path: Path) -> NoteStore:
        return PgNotes(await self.read(user_id, "notes", path))

    async def changed(self, user_id: str, source: str, path: Path) -> None:
        """A write changed them: the embedding worker looks at them now, not at its next look."""
        if self.background is not None:
            self.background.notice(PgVectorStore(await self._open(), user_id, source), force=True)

    async def reading(self, user_id: str, source: str, path: Path) -> Any:
        return PgStore(await self._open(), user_id, source, path)

    async def import_files(
        self,
        user_id: str,
        source: str,
        path: Path,
        paths: list[Path],
        *,
        prune: bool,
        max_file_bytes: int,
        on_file: Callable[[Path], None] | None = None,
    ) -> ImportSummary:
        writer = PgItemWriter(await self._open(), get_source(source), user_id, max_file_bytes=max_file_bytes)
        return await writer.run(paths, prune=prune)

    async def embed(
        self, user_id: str, source: str, path: Path, model: Embedder, progress: Progress
    ) -> EmbedReport | None:
        """Embed the chunks of the user's source without vectors (None: it has no chunks)."""
        pg = await self._open()
        if not (await coverage(pg, user_id, source)).chunks:
            return None
        return await embed_missing(PgVectorStore(pg, user_id, source), model, progress)

    def watched(self) -> WatchedItems:
        return PgWatched(self, self.data_dir, self.background)

    async def settled(self, user_id: str, sources: list[str]) -> None:
        """Until `user_id`'s `sources` small enough to copy are ranked from their copies in memory
        and the larger ones have their common words read ahead (`memory.settled`, one after the
        other), as the SQLite pool's `settled`: for benchmarks."""
        pg = await self._open()
        for source in sources:
            await settled(pg, (user_id, source), get_source(source).weights)

    async def _open(self) -> PgDatabase:
        if self._pg is not None:
            return self._pg
        async with self._lock:
            if self._pg is None:
                pg = await open_pg(self.url)
                try:
                    await migrate(pg, COMPONENT, MIGRATIONS)
                except BaseException:
                    await pg.close()
                    raise
                pg.caches[CACHE] = MemoryCopies(*self.memory)
                self._pg = pg
        return self._pg

    async def close(self) -> None:
        if self._pg is not None:
            await self._pg.close()
            self._pg = None
