"""SQLite access: connections in WAL mode, versioned migrations, per-user database paths.

Each source keeps its own database file per user: `<data_dir>/users/<folder>/<source>.db`, the
folder named from the user id by `users.py`.
Migrations are a small ordered registry per source, each applied in its own transaction and
recorded in `PRAGMA user_version`.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite
from loguru import logger

from ..errors import SchemaVersionError
from .damage import integrity
from .damage.failures import source_failure, storage_failure  # re-exported: their home was here
from .users import USER_ID_RE as USER_ID_RE  # user ids and folders live in users.py
from .users import database_path as database_path
from .users import user_dir as user_dir
from .users import validate_user_id as validate_user_id

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; migrations run unlocked as before
    fcntl = None  # type: ignore[assignment]

__all__ = ["Database", "Migration", "database_path", "migrate", "open_database", "source_failure"]
__all__ += ["storage_failure", "user_dir", "validate_user_id"]

MMAP_SIZE = 1 << 40
"""Memory-map the whole database file (SQLite caps this at its build's limit, 2 GB here), for a
file of at least `MAP_FROM_BYTES` (`mmap_size`).

Reads then come straight from the mapped file (the OS page cache) instead of a read call and a
copy into the connection's own page cache per page, which a large source's first look at its
term pages pays for (`docs/performance.md`, fourth pass).
"""

MAP_FROM_BYTES = 256 << 20
"""A smaller file is read through read calls and a small page cache (`CACHE_KIB`): the OS keeps
its pages in its own file cache either way, but mapped pages a process has touched count in its
resident memory, and at this size read calls cost no measurable search time
(`docs/performance.md`, "A small database file read, not mapped")."""

CACHE_KIB = 8192
"""Each connection's own page cache (`PRAGMA cache_size`), KiB: it holds written pages and an
unmapped file's hot pages; the OS's file cache holds the rest."""


def mmap_size(path: Path) -> int:
    """The `PRAGMA mmap_size` for the database at `path`: the whole file when it is large, none
    when it is small (or not there yet)."""
    try:
        return MMAP_SIZE if path.stat().st_size >= MAP_FROM_BYTES else 0
    except OSError:
        return 0


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


class Database:
    """One aiosqlite connection with a write lock; readers share it, writers take turns.

    Corruption SQLite reports in any statement marks the database `damaged` (and is remembered
    beside the file, `integrity`): from then on every write is refused before it starts, so
    nothing is ever written into a damaged file."""

    def __init__(self, conn: aiosqlite.Connection, path: Path, *, checked: bool = False) -> None:
        self.conn = conn
        self.path = path
        self._write_lock = asyncio.Lock()
        self.caches: dict[str, Any] = {}
        """Caches of what is in this database (e.g. term statistics), owned by their users."""
        self.memory_index_max_chunks: int | None = None
        """The most chunks a source may have to be copied into memory (`memory_index`); None:
        that module's default, 0: never."""
        self.damaged: str | None = None
        """What SQLite reported when it found the file damaged; None while none was seen."""
        self.checked = checked
        """The file was known clean when opened (so a clean close keeps it known clean)."""

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[aiosqlite.Row]:
        # One trip to the connection's thread (a cursor's execute, fetch and close are three).
        try:
            return list(await self.conn.execute_fetchall(sql, params))
        except sqlite3.DatabaseError as exc:
            self.notice(exc)
            raise

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> aiosqlite.Row | None:
        return next(iter(await self.fetchall(sql, params)), None)

    async def write(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One statement as its own transaction (autocommit): one trip to the connection's
        thread, where `transaction` takes three."""
        self.refuse_if_damaged()
        async with self._write_lock:
            await self.fetchall(sql, params)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """BEGIN IMMEDIATE … COMMIT, rolled back on any error."""
        self.refuse_if_damaged()
        async with self._write_lock:
            await self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException as exc:
                self.notice(exc)
                # SQLite itself rolls back on some errors (SQLITE_FULL, a corrupt page); a second
                # ROLLBACK would raise "no transaction is active" and hide the real error.
                if self.conn.in_transaction:
                    await self.conn.execute("ROLLBACK")
                raise
            await self.conn.execute("COMMIT")

    def notice(self, exc: BaseException) -> None:
        """Mark the database damaged when `exc` is SQLite reporting corruption."""
        if self.damaged is None and integrity.is_corruption(exc):
            self.damaged = str(exc)
            integrity.remember_damage(self.path, self.damaged)
            logger.warning("{} of user {} is damaged: {}", self.path.name, self.path.parent.name, exc)

    async def drop_cached_pages(self) -> None:
        """Forget the pages this connection cached: the file was changed behind it (a checkpoint,
        another process, damage), and the next read should see it as it is now. SQLite keeps the
        cache while the file's change counter and write-ahead log say it is current, which a page
        overwritten in place does not change."""
        try:
            await self.conn.execute("PRAGMA shrink_memory")
        except sqlite3.Error as exc:
            self.notice(exc)

    def refuse_if_damaged(self) -> None:
        if self.damaged is not None:
            raise integrity.DamagedDatabaseError(self.path, self.damaged)

    async def close(self) -> None:
        for cache in self.caches.values():
            close = getattr(cache, "close", None)
            if close is not None:
                close()
        await self.conn.close()
        if self.checked and self.damaged is None and not integrity.unclean_shutdown(self.path):
            integrity.remember_clean(self.path, closed=True)  # our own writes keep it clean


async def migrate(conn: aiosqlite.Connection, migrations: Sequence[Migration], path: Path) -> int:
    """Apply pending migrations in order, each in its own transaction; refuse a newer database.

    Several processes may open one fresh file at once (two servers and an import): pending
    migrations run under an exclusive lock on `<name>.db-lock`, and the version is read again
    once it is held, so each migration runs once, by whoever came first."""
    latest = max((m.version for m in migrations), default=0)
    current = await _user_version(conn, path, latest)
    if current >= latest:
        return current
    async with file_lock(lock_path(path)):
        current = await _user_version(conn, path, latest)
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
    return latest


def lock_path(path: Path) -> Path:
    """The file whose lock a database's schema changes (journal mode, migrations) are made under."""
    return path.with_name(path.name + "-lock")


async def _write_ahead_logging(conn: aiosqlite.Connection, path: Path) -> None:
    """Switch a new database (or one in rollback mode) to WAL, under the schema lock: two
    connections switching one file at once deadlock, and SQLite answers one of them "database
    is locked" at once instead of waiting."""
    async with conn.execute("PRAGMA journal_mode") as cursor:
        row = await cursor.fetchone()
    if row is not None and str(row[0]).lower() == "wal":
        return
    async with file_lock(lock_path(path)):
        await conn.execute("PRAGMA journal_mode = WAL")


async def _user_version(conn: aiosqlite.Connection, path: Path, latest: int) -> int:
    async with conn.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    current = int(row[0]) if row else 0
    if current > latest:
        raise SchemaVersionError(
            f"{path.name} has schema version {current}, newer than this knowledge-mcp supports "
            f"({latest}); upgrade knowledge-mcp"
        )
    return current


@asynccontextmanager
async def file_lock(path: Path) -> AsyncIterator[None]:
    """An exclusive advisory lock on `path` (created if missing) across processes; released when
    the block ends, or when the process dies. Waited for on a worker thread, not the loop."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fcntl is not None:
            await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


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
    """Open (creating if needed) a database in WAL mode and migrate it. An existing file is
    checked first (`integrity.check_at_open`): a damaged one raises DamagedDatabaseError before
    anything is written into it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    checked = await asyncio.to_thread(integrity.check_at_open, path)
    conn = await aiosqlite.connect(path, isolation_level=None)
    conn.row_factory = aiosqlite.Row
    try:
        await conn.execute("PRAGMA busy_timeout = 10000")
        await _write_ahead_logging(conn, path)
        await conn.execute("PRAGMA synchronous = NORMAL")
        await conn.execute("PRAGMA foreign_keys = ON")
        await conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        await conn.execute(f"PRAGMA mmap_size = {mmap_size(path)}")
        await migrate(conn, migrations, path)
        if readonly:
            await conn.execute("PRAGMA query_only = ON")
    except BaseException:
        await conn.close()
        raise
    return Database(conn, path, checked=checked)
