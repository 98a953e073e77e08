"""User ids and paths, migrations (versioned, atomic, refusing newer databases) and WAL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiosqlite
import pytest

from knowledge_mcp.sources.errors import InvalidArgumentError, SchemaVersionError
from knowledge_mcp.sources.storage.db import (
    Migration,
    database_path,
    migrate,
    open_database,
    storage_failure,
    user_dir,
    validate_user_id,
)
from knowledge_mcp.sources.storage.users import folder_name

GOOD_IDS = ["alice", "a.b@c-d_e", "Bob42", "x", "a" * 64, "user@example.com", "...", "_", "-"]
BAD_IDS = [
    "",
    ".",
    "..",
    "a/b",
    "../b",
    "a/../../b",
    "/abs",
    "%2e%2e",
    "a" * 65,
    "alice smith",
    " alice",
    "alice ",
    "alice\n",
    "\nalice",
    "a\tb",
    "a\\b",
    "a\x00b",
    "ålice",
    "user:1",
    "~",
    "a*",
]


@pytest.mark.parametrize("user_id", GOOD_IDS)
def test_safe_user_ids_are_accepted_as_they_are(user_id: str) -> None:
    assert validate_user_id(user_id) == user_id


@pytest.mark.parametrize("user_id", BAD_IDS, ids=[repr(u) for u in BAD_IDS])
def test_unsafe_user_ids_are_rejected_naming_the_field(user_id: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        validate_user_id(user_id)
    assert info.value.field == "user"
    assert str(info.value).startswith("user: ")


@pytest.mark.parametrize("user_id", BAD_IDS, ids=[repr(u) for u in BAD_IDS])
def test_user_dir_refuses_unsafe_ids(tmp_path: Path, user_id: str) -> None:
    with pytest.raises(InvalidArgumentError):
        user_dir(tmp_path, user_id)


@pytest.mark.parametrize("user_id", GOOD_IDS)
def test_user_dir_stays_inside_the_data_dir(tmp_path: Path, user_id: str) -> None:
    path = user_dir(tmp_path / "data", user_id)
    root = (tmp_path / "data" / "users").resolve()
    assert path.parent == root
    assert path.name == folder_name(user_id)
    assert root in path.parents


def test_database_path_is_the_source_file_in_the_user_dir(tmp_path: Path) -> None:
    path = database_path(tmp_path, "alice", "notes")
    assert path == (tmp_path / "users").resolve() / "alice" / "notes.db"


def test_a_symlinked_user_dir_pointing_outside_is_refused(tmp_path: Path) -> None:
    (tmp_path / "data" / "users").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "data" / "users" / "mallory").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InvalidArgumentError, match="outside"):
        user_dir(tmp_path / "data", "mallory")


MIGRATIONS = [
    Migration(1, "items", "CREATE TABLE items (id INTEGER PRIMARY KEY, title TEXT NOT NULL);"),
    Migration(
        2,
        "tags",
        "CREATE TABLE tags (id INTEGER PRIMARY KEY, name TEXT);\n"
        "ALTER TABLE items ADD COLUMN tag_id INTEGER;",
    ),
]


async def user_version(conn: aiosqlite.Connection) -> int:
    async with conn.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def tables(conn: aiosqlite.Connection) -> set[str]:
    async with conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'") as cursor:
        return {row[0] for row in await cursor.fetchall()}


@pytest.mark.anyio
async def test_a_fresh_database_is_migrated_to_the_latest_version(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "users" / "alice" / "notes.db", MIGRATIONS)
    try:
        assert await user_version(db.conn) == 2
        assert {"items", "tags"} <= await tables(db.conn)
    finally:
        await db.close()


@pytest.mark.anyio
async def test_reopening_a_migrated_database_is_a_no_op(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    db = await open_database(path, MIGRATIONS)
    await db.conn.execute("INSERT INTO items (title) VALUES ('kept')")
    await db.close()
    # Re-running migration 1 or 2 would fail (the tables and column exist), so success means none ran.
    db = await open_database(path, MIGRATIONS)
    try:
        assert await user_version(db.conn) == 2
        assert [tuple(r) for r in await db.fetchall("SELECT title FROM items")] == [("kept",)]
    finally:
        await db.close()


@pytest.mark.anyio
async def test_an_older_database_gets_only_the_missing_migrations(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    db = await open_database(path, MIGRATIONS[:1])
    assert await user_version(db.conn) == 1
    await db.close()
    db = await open_database(path, MIGRATIONS)
    try:
        assert await user_version(db.conn) == 2
        assert "tags" in await tables(db.conn)
    finally:
        await db.close()


@pytest.mark.anyio
async def test_migrate_returns_the_version_and_applies_in_version_order(tmp_path: Path) -> None:
    async with aiosqlite.connect(tmp_path / "x.db", isolation_level=None) as conn:
        assert await migrate(conn, list(reversed(MIGRATIONS)), tmp_path / "x.db") == 2
        assert await user_version(conn) == 2


@pytest.mark.anyio
async def test_a_newer_database_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 7")
    conn.close()
    with pytest.raises(SchemaVersionError) as info:
        await open_database(path, MIGRATIONS)
    message = str(info.value)
    assert "notes.db" in message
    assert "7" in message and "(2)" in message
    assert "upgrade knowledge-mcp" in message
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (7,)
    conn.close()


@pytest.mark.anyio
async def test_a_failing_migration_leaves_the_database_at_the_previous_version(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    broken = [
        *MIGRATIONS,
        Migration(
            3,
            "half",
            "CREATE TABLE half_done (x);\nINSERT INTO items (title) VALUES ('half');\n"
            "CREATE TABLE items (dup);",
        ),
    ]
    with pytest.raises(sqlite3.OperationalError, match="already exists"):
        await open_database(path, broken)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (2,)
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "half_done" not in names
        assert conn.execute("SELECT COUNT(*) FROM items").fetchone() == (0,)
    conn.close()
    # Once fixed, the same database migrates on.
    fixed = [*MIGRATIONS, Migration(3, "half", "CREATE TABLE half_done (x);")]
    db = await open_database(path, fixed)
    try:
        assert await user_version(db.conn) == 3
        assert "half_done" in await tables(db.conn)
    finally:
        await db.close()


@pytest.mark.anyio
async def test_a_failing_first_migration_leaves_a_fresh_database_at_version_zero(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    with pytest.raises(sqlite3.OperationalError):
        await open_database(path, [Migration(1, "bad", "CREATE TABLE ok (x);\nTHIS IS NOT SQL;")])
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (0,)
        assert conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'ok'").fetchone() == (0,)
    conn.close()


@pytest.mark.anyio
async def test_open_database_uses_wal_and_creates_the_folder(tmp_path: Path) -> None:
    path = tmp_path / "users" / "bob" / "notes.db"
    db = await open_database(path, MIGRATIONS)
    try:
        assert path.exists()
        row = await db.fetchone("PRAGMA journal_mode")
        assert row is not None and row[0] == "wal"
        row = await db.fetchone("PRAGMA foreign_keys")
        assert row is not None and row[0] == 1
    finally:
        await db.close()


@pytest.mark.anyio
async def test_a_readonly_database_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    await (await open_database(path, MIGRATIONS)).close()
    db = await open_database(path, MIGRATIONS, readonly=True)
    try:
        with pytest.raises(sqlite3.OperationalError, match=r"readonly|read-only|query_only"):
            await db.conn.execute("INSERT INTO items (title) VALUES ('x')")
    finally:
        await db.close()


@pytest.mark.anyio
async def test_a_failed_transaction_is_rolled_back(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "notes.db", MIGRATIONS)
    try:
        with pytest.raises(RuntimeError):
            async with db.transaction() as conn:
                await conn.execute("INSERT INTO items (title) VALUES ('gone')")
                raise RuntimeError("boom")
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO items (title) VALUES ('kept')")
        assert [tuple(r) for r in await db.fetchall("SELECT title FROM items")] == [("kept",)]
    finally:
        await db.close()


def _sqlite_error(code: int, name: str, message: str) -> sqlite3.DatabaseError:
    error = sqlite3.OperationalError(message)
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    error.sqlite_errorname = name  # type: ignore[attr-defined]
    return error


STORAGE_ERRORS = [
    (_sqlite_error(26, "SQLITE_NOTADB", "file is not a database"), "not a knowledge-mcp database"),
    (_sqlite_error(11, "SQLITE_CORRUPT", "database disk image is malformed"), "damaged"),
    (_sqlite_error(267, "SQLITE_CORRUPT_VTAB", "vtable constructor failed"), "damaged"),
    (_sqlite_error(13, "SQLITE_FULL", "database or disk is full"), "disk is full"),
    (_sqlite_error(14, "SQLITE_CANTOPEN", "unable to open database file"), "cannot be opened"),
    (_sqlite_error(5, "SQLITE_BUSY", "database is locked"), "locked"),
    (_sqlite_error(778, "SQLITE_IOERR_WRITE", "disk I/O error"), "I/O error"),
]
ITEM_ERRORS = [
    _sqlite_error(19, "SQLITE_CONSTRAINT", "UNIQUE constraint failed"),
    _sqlite_error(1, "SQLITE_ERROR", "no such column"),
    UnicodeEncodeError("utf-8", "\udcff", 0, 1, "surrogates not allowed"),
    ValueError("a parser's error"),
]


@pytest.mark.parametrize(("error", "says"), STORAGE_ERRORS)
def test_a_database_wide_sqlite_error_becomes_one_line_with_a_remedy(error: Exception, says: str) -> None:
    failure = storage_failure(error, Path("/data/users/local/notes.db"))
    assert failure is not None
    message = str(failure)
    assert says in message and "/data/users/local/notes.db" in message
    assert "\n" not in message and ("again" in message or "run `knowledge-mcp repair notes`" in message)


@pytest.mark.parametrize("error", ITEM_ERRORS)
def test_an_error_of_one_item_is_not_a_database_failure(error: Exception) -> None:
    assert storage_failure(error, Path("notes.db")) is None


async def pragma(conn: aiosqlite.Connection, name: str) -> int:
    async with conn.execute(f"PRAGMA {name}") as cursor:
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.anyio
async def test_only_a_database_file_of_the_mapping_size_or_more_is_memory_mapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from knowledge_mcp.sources.storage import db as storage_db

    path = tmp_path / "notes.db"
    await (await open_database(path, MIGRATIONS)).close()
    size = path.stat().st_size
    for threshold, mapped in ((size, True), (size + 1, False)):
        monkeypatch.setattr(storage_db, "MAP_FROM_BYTES", threshold)
        db = await open_database(path, MIGRATIONS)
        try:
            assert (await pragma(db.conn, "mmap_size") > 0) is mapped
            assert await pragma(db.conn, "cache_size") == -storage_db.CACHE_KIB
        finally:
            await db.close()
