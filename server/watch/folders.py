"""What to watch: for each user and source, the files and folders their imports recorded.

Every import records the paths it was given (`<source>_folders`, `Importer.record_paths`), so
`serve --watch` needs no arguments: it reads those tables (read-only, without migrating a
database the server has not opened) for each watched user; with `item_store = "postgresql"`,
the item store's `pg_folders` (`pg_scan`). A user's own targets are only ever
re-imported into that user's databases; a folder two users imported is two targets.

A changed path belongs to a target when it is the recorded file itself, or lies inside the
recorded folder without passing through a hidden entry (the import walk leaves those out).
Which files of a folder the source reads, and whether a link leads out of the folder, is
decided when the file is re-imported (`reindex`), by the import's own rules.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from loguru import logger

from knowledge_mcp.sources.registry import SOURCE_NAMES
from knowledge_mcp.sources.storage.db import database_path, validate_user_id
from knowledge_mcp.sources.storage.users import user_of_folder, users_root

RECORDED_SQL = "SELECT path, is_folder FROM {p}_folders ORDER BY path"


@dataclass(frozen=True, order=True)
class Target:
    """One recorded file or folder of one user's source."""

    user_id: str
    source: str
    root: Path
    is_folder: bool

    def owns(self, path: PurePath) -> bool:
        """Whether a change at `path` concerns this target (pure: no file system access)."""
        if path == self.root:
            return True
        if not self.is_folder or self.root not in path.parents:
            return False
        return not any(part.startswith(".") for part in path.relative_to(self.root).parts)


def route(targets: Iterable[Target], paths: Iterable[str]) -> dict[Target, list[str]]:
    """Each target's share of the changed `paths` (a path may concern several targets; one that
    concerns none is dropped). Pure."""
    found: dict[Target, list[str]] = {}
    chosen = list(targets)
    for path in paths:
        pure = PurePath(path)
        for target in chosen:
            if target.owns(pure):
                found.setdefault(target, []).append(path)
    return found


def watched_roots(targets: Iterable[Target]) -> tuple[list[Path], list[Path]]:
    """What watchfiles watches: the folders (recursively) and, for recorded files, their parent
    folders (not recursively: a file replaced by an editor's rename is seen there). Sorted, once."""
    folders = sorted({t.root for t in targets if t.is_folder})
    parents = sorted({t.root.parent for t in targets if not t.is_folder})
    return folders, parents


def users_with_data(data_dir: Path) -> list[str]:
    """The users that have a data folder (`<data_dir>/users/<folder>/`), by id (`users.py`)."""
    try:
        names = sorted(p.name for p in users_root(data_dir).iterdir() if p.is_dir())
    except OSError:
        return []
    return [user for user in map(user_of_folder, names) if user is not None]


def scan(data_dir: Path, users: Sequence[str]) -> tuple[list[Target], list[Target]]:
    """Every recorded file and folder of `users`' sources: those that exist now (to watch) and
    those that are gone (a warning; looked for again at the next scan)."""
    present: set[Target] = set()
    gone: set[Target] = set()
    for user in users:
        for source in SOURCE_NAMES:
            for root, is_folder in recorded(database_path(data_dir, user, source), source):
                target = Target(validate_user_id(user), source, root, is_folder)
                (present if root.exists() else gone).add(target)
    return sorted(present), sorted(gone)


async def pg_scan(items: Any, data_dir: Path, users: Sequence[str]) -> tuple[list[Target], list[Target]]:
    """`scan` of the PostgreSQL item store (`items`: the backend's `PostgresItems`)."""
    from knowledge_mcp.sources.storage.postgres.writers.folders import recorded as pg_recorded

    present: set[Target] = set()
    gone: set[Target] = set()
    for user in users:
        for source in SOURCE_NAMES:
            view = await items.read(user, source, database_path(data_dir, user, source))
            for root, is_folder in await pg_recorded(view.pg, user, source):
                target = Target(validate_user_id(user), source, root, is_folder)
                (present if root.exists() else gone).add(target)
    return sorted(present), sorted(gone)


def recorded(db_path: Path, source: str) -> list[tuple[Path, bool]]:
    """The files and folders recorded in a source's database (none without the table or the
    database); read on a read-only connection of its own."""
    if not db_path.exists():
        return []
    try:
        conn = sqlite3.connect(f"{db_path.as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            rows = conn.execute(RECORDED_SQL.format(p=source)).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        if "no such table" not in str(exc):
            logger.warning("the {} folders of {} could not be read: {}", source, db_path.parent.name, exc)
        return []
    return [(Path(path), bool(is_folder)) for path, is_folder in rows]
