"""The SQLite backend: the users' items in their SQLite files (`<data_dir>/users/<user>/<source>.db`;
also the items of the PostgreSQL backend when `item_store` is `sqlite`), sessions in their
sessions.db, API keys in keys.db, rate limits counted in the process."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from loguru import logger

from knowledge_mcp.sources.errors import SourceUnavailableError
from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.db import (
    Database,
    open_database,
    probe_database,
    source_failure,
    storage_failure,
)
from knowledge_mcp.sources.storage.importing import Importer, ImportSummary
from knowledge_mcp.sources.storage.store import Store

from ..auth.keys import KeyStore, SqliteKeyStore
from ..auth.limits import SharedBuckets
from ..config import Settings
from ..context import DatabasePool
from ..sessions.store import SessionStore
from .protocols import Items, Sessions

if TYPE_CHECKING:  # the dense, note-writing and watch code (numpy) loads when used, never in `import`
    from knowledge_mcp.sources.notes.writing.stores import NoteStore
    from knowledge_mcp.sources.search.dense.embedder import Embedder
    from knowledge_mcp.sources.search.dense.indexing import EmbedReport
    from knowledge_mcp.sources.storage.store.sqlite import SqliteStore

    from ..watch.stores import WatchedItems

Progress = Callable[[int, int], None]


class SqliteItems:
    """The SQLite files of every user, opened through the process's pool."""

    def __init__(self, pool: DatabasePool, data_dir: Path) -> None:
        self.pool, self.data_dir = pool, data_dir
        self._reading: list[Database] = []

    async def read(self, user_id: str, source: str, path: Path) -> Store:
        return await self._store(user_id, source, path)

    async def _store(self, user_id: str, source: str, path: Path) -> SqliteStore:
        started = time.perf_counter()
        db = await self.pool.get(path, source)
        elapsed_ms = (time.perf_counter() - started) * 1000
        logger.debug("db ready user={} source={} in {:.1f} ms", user_id, source, elapsed_ms)
        return _sqlite_store(db, source)

    async def notes(self, user_id: str, path: Path) -> NoteStore:
        from knowledge_mcp.sources.notes.writing.stores import SqliteNotes

        return SqliteNotes(await self._store(user_id, "notes", path))

    async def changed(self, user_id: str, source: str, path: Path) -> None:
        """Nothing to do: the next read tells the embedding worker (`DatabasePool.get`)."""

    async def reading(self, user_id: str, source: str, path: Path) -> Store | None:
        """The source for a terminal search (None without its file); a damaged one is the same
        one sentence a tool answers (source, cause, remedy), not a traceback."""
        if not path.exists():
            return None
        try:
            db = await open_database(path, get_source(source).migrations)
        except sqlite3.DatabaseError as exc:
            failure = source_failure(exc, source, user_id)
            if failure is None:
                raise
            raise failure from None
        self._reading.append(db)
        return _sqlite_store(db, source)

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
        """Import `paths` into the file at `path`; a database that cannot be used (broken, full,
        a folder) is a one-line SourceUnavailableError with its remedy, and what was written stays."""
        try:
            probe_database(path)
            db = await open_database(path, get_source(source).migrations)
        except OSError as exc:
            raise SourceUnavailableError(
                f"database {path} cannot be created ({exc.strerror or exc}): check the data directory"
            ) from exc
        except Exception as exc:
            raise _unusable(exc, path) from None
        try:
            importer = Importer(get_source(source), db, max_file_bytes=max_file_bytes)
            return await importer.run(paths, prune=prune, on_file=on_file)
        except Exception as exc:
            raise _unusable(exc, path) from None
        finally:
            await db.close()

    async def embed(
        self, user_id: str, source: str, path: Path, model: Embedder, progress: Progress
    ) -> EmbedReport | None:
        """Embed the chunks of the source without vectors (None: the user has no such file)."""
        if not path.exists():
            return None
        from knowledge_mcp.sources.search.dense.indexing import embed_missing
        from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore

        db = await open_database(path, get_source(source).migrations)
        try:
            return await embed_missing(
                SqliteVectorStore(db, get_source(source), get_source(source).migrations), model, progress
            )
        finally:
            await db.close()

    def watched(self) -> WatchedItems:
        from ..watch.stores import SqliteWatched

        return SqliteWatched(self.pool, self.data_dir)

    async def close(self) -> None:
        """Close what `reading` opened (the pool's files are the backend's to close)."""
        for db in self._reading:
            await db.close()
        self._reading.clear()


def _sqlite_store(db: Database, source: str) -> SqliteStore:
    """The search side of a source's database (the search code is loaded here, at the first read)."""
    from knowledge_mcp.sources.storage.store.sqlite import SqliteStore

    return SqliteStore(db, source)


def _unusable(exc: Exception, path: Path) -> Exception:
    """The one-line error for a database that cannot be used, else `exc` itself."""
    failure = storage_failure(exc, path)
    if failure is None:
        return exc
    failure.__cause__ = exc
    return failure


class SqliteBackend:
    """Items, sessions and keys in SQLite files under `data_dir`; rate limits in this process."""

    stateless = False
    """A session's state is cached in this process: its requests come here (one process)."""

    def __init__(self, settings: Settings, pool: DatabasePool) -> None:
        self.pool = pool
        self.items: Items = SqliteItems(pool, settings.data_dir)
        ttl = timedelta(minutes=settings.session_ttl_minutes)
        self.sessions: Sessions = SessionStore(
            settings.data_dir, pool, ttl=ttl, cache_size=settings.session_cache_size
        )
        self.keys: KeyStore = SqliteKeyStore(settings.data_dir, pool.open)
        self.buckets: SharedBuckets | None = None

    def start_background(self) -> None:
        if self.pool.background is not None:
            self.pool.background.start()

    async def close(self) -> None:
        await self.items.close()
        await self.pool.close()
