"""Where a written note is indexed: the user's SQLite notes database, or the PostgreSQL item
store (`item_store = "postgresql"`). The backend's items hand the writer its `NoteStore`
(`server/backend` `Items.notes`): nothing here asks which store it has.

The writer itself is the same for both (`writer.py`); a `NoteStore` gives it what differs: the
writer lock, the folders the user imported notes from, an imported file's record, the import
runner's item store (`runs.ItemStore`: SQLite's `Importer`, PostgreSQL's `PgItemWriter`) and
whether the notes have vectors to compare a new note with (on PostgreSQL, `window_vectors` reads
them from `pg_chunk_vectors`).

SQLite's lock is the database's own asyncio lock (one process serves a SQLite file). On
PostgreSQL several processes may write one user's notes (`serve --workers N`): the lock is
also the database's advisory lock of the user (`postgres/writers/locking.py`), so an update's version
check, its file write and its indexing are one step no other writer comes between.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ...storage.db import Database
from ...storage.importing import Importer
from ...storage.naming import stored_path
from ...storage.runs import FileRecord, ItemStore
from ...storage.store import Store
from ...storage.store.sqlite import SqliteStore
from ..source import source

Matrix = npt.NDArray[np.float32]
WRITE_LOCK = "notes_writing"
"""The SQLite database's cache entry holding its writer lock (the watcher takes it too)."""
FOLDERS_SQL = "SELECT path, is_folder FROM notes_folders ORDER BY imported_at DESC, rowid DESC"
KNOWN_FILE_SQL = "SELECT path, file_hash, item_count, size, mtime_ns FROM notes_files WHERE path = ?"
PG_KNOWN_FILE_SQL = """SELECT path, file_hash, item_count, size, mtime_ns FROM pg_files
    WHERE user_id = %s AND source = %s AND path = %s"""
STORED_BYTES_SQL = "SELECT coalesce(sum(size), 0) FROM notes_files WHERE path >= ? AND path < ?"
PG_STORED_BYTES_SQL = """SELECT coalesce(sum(size), 0) AS bytes FROM pg_files
    WHERE user_id = %s AND source = %s AND path >= %s AND path < %s"""
ANY_VECTOR_SQL = "SELECT 1 FROM notes_chunk_vectors LIMIT 1"
VECTORS_SQL = """SELECT c.item_rowid, count(c.id) AS chunks, count(cv.chunk_id) AS embedded,
    group_concat(cv.text_hash) AS hashes FROM notes_chunks AS c
    LEFT JOIN notes_chunk_vectors AS cv ON cv.chunk_id = c.id
    WHERE c.item_rowid IN ({marks}) GROUP BY c.item_rowid"""
WINDOWS_SQL = "SELECT windows, vectors FROM notes_vectors WHERE text_hash IN ({marks})"
PG_ANY_VECTOR_SQL = "SELECT 1 FROM pg_chunk_vectors WHERE user_id = %s AND source = %s LIMIT 1"
PG_WINDOWS_SQL = """SELECT c.item, count(DISTINCT c.id) AS chunks, count(DISTINCT v.chunk) AS embedded,
    array_agg(v.embedding::real[]) FILTER (WHERE v.chunk IS NOT NULL) AS windows
    FROM pg_chunks AS c LEFT JOIN pg_chunk_vectors AS v ON v.user_id = c.user_id AND v.chunk = c.id
    WHERE c.user_id = %s AND c.source = %s AND c.item = ANY(%s::bigint[]) GROUP BY c.item"""
"""Each candidate's chunk count, embedded chunk count and window vectors (`real[]`, pgvector's too)."""


class NoteStore(Protocol):
    store: Store
    """The notes as the tools read them (their `Store`: SQLite or PostgreSQL)."""

    def lock(self) -> AbstractAsyncContextManager[None]: ...

    async def imported(self) -> list[tuple[Path, bool]]:
        """The files and folders notes were imported from, the latest first."""
        ...

    async def known_file(self, key: str) -> FileRecord | None: ...

    def item_store(self) -> ItemStore: ...

    async def has_vectors(self) -> bool: ...

    async def stored_bytes(self, folder: Path) -> int:
        """The bytes of the indexed note files under `folder` (as their records say)."""
        ...

    async def window_vectors(self, rowids: list[int]) -> dict[int, Matrix]:
        """The window vectors (rows) of each of `rowids` whose chunks all have them."""
        ...


def under(folder: Path) -> tuple[str, str]:
    """The range of recorded paths under `folder`: from `folder` and a separator up to (not
    including) `folder` and the character after the separator."""
    prefix = os.path.join(str(stored_path(folder)), "")
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


class SqliteNotes:
    """A user's notes in their SQLite file (`store.db`)."""

    def __init__(self, store: SqliteStore) -> None:
        self.store: Store = store
        self.db: Database = store.db

    @asynccontextmanager
    async def lock(self) -> AsyncIterator[None]:
        lock: asyncio.Lock = self.db.caches.setdefault(WRITE_LOCK, asyncio.Lock())
        async with lock:
            yield

    async def imported(self) -> list[tuple[Path, bool]]:
        return [(Path(row["path"]), bool(row["is_folder"])) for row in await self.db.fetchall(FOLDERS_SQL)]

    async def known_file(self, key: str) -> FileRecord | None:
        return await self.db.fetchone(KNOWN_FILE_SQL, (key,))

    def item_store(self) -> ItemStore:
        return Importer(source, self.db)

    async def has_vectors(self) -> bool:
        return await self.db.fetchone(ANY_VECTOR_SQL) is not None

    async def stored_bytes(self, folder: Path) -> int:
        row = await self.db.fetchone(STORED_BYTES_SQL, under(folder))
        return int(row[0]) if row is not None else 0

    async def window_vectors(self, rowids: list[int]) -> dict[int, Matrix]:
        rows = await self.db.fetchall(VECTORS_SQL.format(marks=",".join("?" * len(rowids))), rowids)
        complete = {r["item_rowid"]: r["hashes"].split(",") for r in rows if r["chunks"] == r["embedded"] > 0}
        found: dict[int, Matrix] = {}
        for rowid, hashes in complete.items():
            stored = await self.db.fetchall(WINDOWS_SQL.format(marks=",".join("?" * len(hashes))), hashes)
            if stored:
                found[rowid] = np.vstack(
                    [np.frombuffer(r["vectors"], np.float32).reshape(int(r["windows"]), -1) for r in stored]
                )
        return found


class PgNotes:
    """A user's notes in the PostgreSQL store (`store`: a `PgStore`; psycopg is imported only here)."""

    def __init__(self, store: Any) -> None:
        self.store: Store = store
        self.db = store

    def lock(self) -> AbstractAsyncContextManager[None]:
        from ...storage.postgres.writers.locking import writer_lock

        return writer_lock(self.db.pg, self.db.user_id)

    async def imported(self) -> list[tuple[Path, bool]]:
        from ...storage.postgres.writers.folders import recorded

        return await recorded(self.db.pg, self.db.user_id, source.name)

    async def known_file(self, key: str) -> FileRecord | None:
        rows = await self.db.rows(PG_KNOWN_FILE_SQL, (key,))
        return rows[0] if rows else None

    def item_store(self) -> ItemStore:
        from ...storage.postgres.writing import PgItemWriter

        return PgItemWriter(self.db.pg, source, self.db.user_id)

    async def has_vectors(self) -> bool:
        return bool(await self.db.rows(PG_ANY_VECTOR_SQL, ()))

    async def stored_bytes(self, folder: Path) -> int:
        rows = await self.db.rows(PG_STORED_BYTES_SQL, under(folder))
        return int(rows[0]["bytes"]) if rows else 0

    async def window_vectors(self, rowids: list[int]) -> dict[int, Matrix]:
        """The window vectors of each of `rowids` whose chunks all have them (`pg_chunk_vectors`)."""
        rows = await self.db.rows(PG_WINDOWS_SQL, (rowids,))
        complete = [r for r in rows if int(r["chunks"]) == int(r["embedded"]) > 0]
        return {int(r["item"]): np.asarray(r["windows"], dtype=np.float32) for r in complete}
