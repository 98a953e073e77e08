"""SQLite access: connections in WAL mode, versioned migrations, per-user database paths.

Each source keeps its own database file per user: `<data_dir>/users/<folder>/<source>.db`, the
folder named from the user id by `users.py`.
Migrations are a small ordered registry per source, each applied in its own transaction and
recorded in `PRAGMA user_version`.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite

from ..errors import SchemaVersionError, SourceUnavailableError
from .users import USER_ID_RE as USER_ID_RE  # user ids and folders live in users.py
from .users import database_path as database_path
from .users import user_dir as user_dir
from .users import validate_user_id as validate_user_id

MMAP_SIZE = 1 << 40
"""Memory-map the whole database file (SQLite caps this at its build's limit, 2 GB here).

Reads then come straight from the mapped file (the OS page cache) instead of a read call and a
copy into the connection's own page cache per page: a search's first look at a large
source's term pages cost 20-35 ms through read calls at 1M chunks, 2-6 ms mapped. The mapping
is address space, not memory: the pages are the OS's shared, reclaimable file cache.
"""


STORAGE_FAILURES = {
    "SQLITE_NOTADB": "is not a knowledge-mcp database (not SQLite at all)",
    "SQLITE_CORRUPT": "is damaged (database disk image is malformed)",
    "SQLITE_FULL": "cannot grow: the disk is full",
    "SQLITE_IOERR": "could not be read or written (I/O error)",
    "SQLITE_CANTOPEN": "cannot be opened (is it a folder, or in a folder you cannot write?)",
    "SQLITE_READONLY": "is read-only",
    "SQLITE_PERM": "may not be written (permission denied)",
    "SQLITE_BUSY": "is locked by another process",
    "SQLITE_LOCKED": "is locked by another process",
}
"""SQLite errors that concern the whole database, not the item being written (by primary code)."""
STORAGE_REMEDIES = {
    "SQLITE_NOTADB": "move it aside and run the import again to rebuild it",
    "SQLITE_CORRUPT": "move it aside and run the import again to rebuild it",
    "SQLITE_FULL": "free some disk space and run the import again; what was imported is kept",
    "SQLITE_CANTOPEN": "make it a writable file (or remove it) and run the import again",
    "SQLITE_BUSY": "wait for the other process, then run the import again",
    "SQLITE_LOCKED": "wait for the other process, then run the import again",
}


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


class Database:
    """One aiosqlite connection with a write lock; readers share it, writers take turns."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        self._write_lock = asyncio.Lock()
        self.caches: dict[str, Any] = {}
        """Caches of what is in this database (e.g. term statistics), owned by their users."""
        self.memory_index_max_chunks: int | None = None
        """The most chunks a source may have to be copied into memory (`memory_index`); None:
        that module's default, 0: never."""

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[aiosqlite.Row]:
        # One trip to the connection's thread (a cursor's execute, fetch and close are three).
        return list(await self.conn.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> aiosqlite.Row | None:
        rows = await self.conn.execute_fetchall(sql, params)
        return next(iter(rows), None)

    async def write(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One statement as its own transaction (autocommit): one trip to the connection's
        thread, where `transaction` takes three."""
        async with self._write_lock:
            await self.conn.execute_fetchall(sql, params)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """BEGIN IMMEDIATE … COMMIT, rolled back on any error."""
        async with self._write_lock:
            await self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                # SQLite itself rolls back on some errors (SQLITE_FULL, a corrupt page); a second
                # ROLLBACK would raise "no transaction is active" and hide the real error.
                if self.conn.in_transaction:
                    await self.conn.execute("ROLLBACK")
                raise
            await self.conn.execute("COMMIT")

    async def close(self) -> None:
        for cache in self.caches.values():
            close = getattr(cache, "close", None)
            if close is not None:
                close()
        await self.conn.close()


def storage_failure(exc: BaseException, path: Path) -> SourceUnavailableError | None:
    """A one-line reason and remedy when `exc` means the database at `path` is unusable (broken,
    full, unopenable), else None (the error concerns one item and the import may go on)."""
    key = _primary_name(exc)
    if key is None:
        return None
    remedy = STORAGE_REMEDIES.get(key, "check the file and the disk, then run the import again")
    return SourceUnavailableError(f"database {path} {STORAGE_FAILURES[key]}: {remedy}")


SOURCE_FAILURES = {
    "SQLITE_NOTADB": ("is damaged (file is not a database)", "rebuild"),
    "SQLITE_CORRUPT": ("is damaged (database disk image is malformed)", "rebuild"),
    "SQLITE_FULL": ("cannot be written: the disk is full", "free some disk space and try again"),
    "SQLITE_IOERR": ("could not be read (I/O error)", "check the disk, then try again"),
    "SQLITE_CANTOPEN": ("cannot be opened", "make the file readable, or rebuild"),
    "SQLITE_READONLY": ("is read-only", "make the file writable and try again"),
    "SQLITE_PERM": ("may not be read or written (permission denied)", "fix the file's permissions"),
    "SQLITE_BUSY": ("is locked by another process", "try again when that process has finished"),
    "SQLITE_LOCKED": ("is locked by another process", "try again when that process has finished"),
}
"""What a tool says when a source's database is unusable: (cause, remedy); "rebuild" is spelled
out by `source_failure` with the source's own import command."""


def source_failure(
    exc: BaseException, source: str | None, user: str = "local"
) -> SourceUnavailableError | None:
    """One sentence for a tool whose `source` database is unusable (damaged, full, unopenable):
    the source, the cause and the remedy, never the file's path; None when `exc` is no such error
    (a failure of one statement, not of the file). `source` None: a tool that reads several."""
    key = _primary_name(exc)
    if key is None:
        return None
    cause, remedy = SOURCE_FAILURES[key]
    if source is None:
        rebuild = "move that source's .db file aside and re-import it (its own search tool names it)"
        return SourceUnavailableError(f"a source database {cause}; {remedy.replace('rebuild', rebuild)}")
    rebuild = f"move {source}.db aside and re-import it with `knowledge-mcp import {source} <folder>"
    rebuild += "`" if user == "local" else f" --user {user}`"
    return SourceUnavailableError(f"the {source} database {cause}; {remedy.replace('rebuild', rebuild)}")


def _primary_name(exc: BaseException) -> str | None:
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    return _PRIMARY_NAMES.get(code & 0xFF) if isinstance(code, int) else None


_PRIMARY_NAMES = {3: "SQLITE_PERM", 5: "SQLITE_BUSY", 6: "SQLITE_LOCKED", 8: "SQLITE_READONLY",
                  10: "SQLITE_IOERR", 11: "SQLITE_CORRUPT", 13: "SQLITE_FULL", 14: "SQLITE_CANTOPEN",
                  26: "SQLITE_NOTADB"}  # fmt: skip


async def migrate(conn: aiosqlite.Connection, migrations: Sequence[Migration], path: Path) -> int:
    """Apply pending migrations in order; refuse a database newer than the code."""
    async with conn.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    current = int(row[0]) if row else 0
    latest = max((m.version for m in migrations), default=0)
    if current > latest:
        raise SchemaVersionError(
            f"{path.name} has schema version {current}, newer than this knowledge-mcp supports "
            f"({latest}); upgrade knowledge-mcp"
        )
    for migration in sorted(migrations, key=lambda m: m.version):
        if migration.version <= current:
            continue
        script = f"BEGIN IMMEDIATE;\n{migration.sql}\nPRAGMA user_version = {migration.version};\nCOMMIT;"
        try:
            await conn.executescript(script)
        except Exception:
            if conn.in_transaction:
                await conn.execute("ROLLBACK")
            raise
    return max(current, latest)


def probe_database(path: Path) -> None:
    """Read an existing database's schema once, synchronously: a broken file (not SQLite,
    truncated, a folder) raises its sqlite3 error here, before any connection thread exists."""
    if not path.exists() and not path.is_symlink():
        return
    conn = sqlite3.connect(path, timeout=10)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    finally:
        conn.close()


async def open_database(path: Path, migrations: Sequence[Migration], *, readonly: bool = False) -> Database:
    """Open (creating if needed) a source database in WAL mode and migrate it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = await aiosqlite.connect(path, isolation_level=None)
    conn.row_factory = aiosqlite.Row
    try:
        await conn.execute("PRAGMA busy_timeout = 10000")
        await conn.execute("PRAGMA journal_mode = WAL")
        await conn.execute("PRAGMA synchronous = NORMAL")
        await conn.execute("PRAGMA foreign_keys = ON")
        await conn.execute("PRAGMA cache_size = -65536")
        await conn.execute(f"PRAGMA mmap_size = {MMAP_SIZE}")
        await migrate(conn, migrations, path)
        if readonly:
            await conn.execute("PRAGMA query_only = ON")
    except BaseException:
        await conn.close()
        raise
    return Database(conn, path)
