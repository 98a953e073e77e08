"""The files and folders each user imported into the PostgreSQL item store (`pg_folders`).

SQLite keeps them in each source's `<source>_folders` (`Importer.record_paths`); the PostgreSQL
store keeps one table for every user and source, written by every import (`PgItemWriter.run`).
They say where the local user's new notes go (the folder notes were last imported from) and what
`serve --watch` watches. Its own migration component (`folders`), so the item tables' migrations
are not touched; row-level security as theirs (a user sees only their own rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ....text import dates
from ...db import validate_user_id
from ...naming import stored_path
from ..migrations import PgMigration, migrate
from ..pool import PgDatabase
from ..schema import POLICY_SQL, as_user

COMPONENT = "folders"
TABLE_V1 = f"""
CREATE TABLE pg_folders (
    user_id text NOT NULL,
    source text NOT NULL,
    path text NOT NULL,
    is_folder boolean NOT NULL,
    imported_at text NOT NULL,
    PRIMARY KEY (user_id, source, path)
);
{POLICY_SQL.format(t="pg_folders")}
"""
MIGRATIONS = (PgMigration(1, "the files and folders each user imported", TABLE_V1),)
RECORD_SQL = """INSERT INTO pg_folders (user_id, source, path, is_folder, imported_at)
    VALUES (%s, %s, %s, %s, %s) ON CONFLICT (user_id, source, path)
    DO UPDATE SET is_folder = excluded.is_folder, imported_at = excluded.imported_at"""
RECORDED_SQL = """SELECT path, is_folder FROM pg_folders WHERE user_id = %s AND source = %s
    ORDER BY imported_at DESC, path"""
READY = "pg_folders_ready"


async def ensure_folders(db: PgDatabase) -> None:
    """Create (migrate) the table once per pool."""
    if not db.caches.get(READY):
        await migrate(db, COMPONENT, MIGRATIONS)
        db.caches[READY] = True


async def record_paths(db: PgDatabase, user_id: str, source: str, paths: Sequence[Path]) -> None:
    """Remember the files and folders an import of `user_id`'s `source` was given."""
    user_id = validate_user_id(user_id)
    now = dates.now()
    rows = [(str(stored_path(p.resolve())), p.is_dir()) for p in paths if p.exists()]
    await ensure_folders(db)
    async with db.transaction() as conn:
        await as_user(conn, user_id)
        for path, is_folder in rows:
            await conn.execute(RECORD_SQL, (user_id, source, path, is_folder, now))


async def copy_recorded(db: PgDatabase, user_id: str, source: str, rows: Sequence[Any]) -> None:
    """Record what another store recorded: rows of (path, is_folder, imported_at) as SQLite's
    `<source>_folders` holds them (`migrate --to`)."""
    user_id = validate_user_id(user_id)
    await ensure_folders(db)
    async with db.transaction() as conn:
        await as_user(conn, user_id)
        for path, is_folder, imported_at in rows:
            await conn.execute(RECORD_SQL, (user_id, source, path, bool(is_folder), imported_at))


async def recorded(db: PgDatabase, user_id: str, source: str) -> list[tuple[Path, bool]]:
    """The files and folders `user_id` imported into `source`, the latest import first."""
    user_id = validate_user_id(user_id)
    await ensure_folders(db)
    async with db.transaction() as conn:
        await as_user(conn, user_id)
        cursor = await conn.execute(RECORDED_SQL, (user_id, source))
        return [(Path(path), bool(is_folder)) for path, is_folder in await cursor.fetchall()]
