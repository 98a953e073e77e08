"""Where the watcher reads the recorded folders and writes a batch: the users' SQLite files, or
the PostgreSQL item store. The backend's items hand the watcher one (`Items.watched`).

SQLite: the folders recorded in each source's file (`folders.scan`); a batch is written on a
connection of its own, under the notes writer's lock of the server's connection (`WRITE_LOCK`).
PostgreSQL: the folders of `pg_folders` (`folders.pg_scan`); a batch goes into the item store
(`pg_index`) under the user's writer lock, which the notes writers of every worker take too.
Either way the embedding worker is told after a batch that changed something.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.search.background import BackgroundIndexer
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.runs import ImportSummary

from ..context import DatabasePool
from .events import Change
from .folders import Target, pg_scan, scan
from .reindex import SqliteIndex, reindex

WRITE_LOCK = "notes_writing"
"""The lock (in the server's database's caches) the notes writer holds while it writes and
indexes a note: a batch takes it too, so a note written through the tools is indexed once."""


class WatchedItems(Protocol):
    """The users' items as the watcher sees them."""

    async def scan(self, users: Sequence[str]) -> tuple[list[Target], list[Target]]:
        """The recorded files and folders of `users`: those there now, and those gone."""
        ...

    async def reindex(
        self, target: Target, paths: list[str], max_file_bytes: int
    ) -> tuple[ImportSummary, Change]:
        """One batch of changed `paths` re-imported into `target`'s source."""
        ...


class SqliteWatched:
    def __init__(self, pool: DatabasePool, data_dir: Path) -> None:
        self.pool, self.data_dir = pool, data_dir

    async def scan(self, users: Sequence[str]) -> tuple[list[Target], list[Target]]:
        return await asyncio.to_thread(scan, self.data_dir, users)

    async def reindex(
        self, target: Target, paths: list[str], max_file_bytes: int
    ) -> tuple[ImportSummary, Change]:
        source = SOURCES[target.source]
        path = database_path(self.data_dir, target.user_id, target.source)
        served = await self.pool.get(path, target.source)
        lock: asyncio.Lock = served.caches.setdefault(WRITE_LOCK, asyncio.Lock())
        async with lock:
            db = await open_database(path, source.migrations)
            try:
                importer = Importer(source, db, max_file_bytes=max_file_bytes)
                summary, change = await reindex(SqliteIndex(importer), target, paths)
            finally:
                await db.close()
        if change and self.pool.background is not None:
            self.pool.background.notice(SqliteVectorStore(served, source, source.migrations), force=True)
        return summary, change


class PgWatched:
    """`items`: the PostgreSQL item store (`postgres/items.PostgresItems`)."""

    def __init__(self, items: Any, data_dir: Path, background: BackgroundIndexer | None) -> None:
        self.items, self.data_dir, self.background = items, data_dir, background

    async def scan(self, users: Sequence[str]) -> tuple[list[Target], list[Target]]:
        return await pg_scan(self.items, self.data_dir, users)

    async def reindex(
        self, target: Target, paths: list[str], max_file_bytes: int
    ) -> tuple[ImportSummary, Change]:
        from knowledge_mcp.sources.storage.postgres.writers.locking import writer_lock
        from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter

        from .pg_index import PgIndex

        path = database_path(self.data_dir, target.user_id, target.source)
        items = await self.items.read(target.user_id, target.source, path)
        writer = PgItemWriter(items.pg, SOURCES[target.source], target.user_id, max_file_bytes=max_file_bytes)
        async with writer_lock(items.pg, target.user_id):
            summary, change = await reindex(PgIndex(writer, items), target, paths)
        if change and self.background is not None:
            self.background.notice(items.vectors(SOURCES[target.source]), force=True)
        return summary, change
