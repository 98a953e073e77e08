"""One batch of changed paths applied to one user's source, through the normal import runner.

Each path is looked at as it is now: a file that is there is re-imported (`ImportRun`: read,
hashed and parsed in a worker thread, written with its record in one transaction per batch of
files; unchanged content is skipped by its hash, so the notes writer's own file write is a
no-op here); a folder that appeared (moved in) is walked like an import of it; a path that is
gone takes its items with it (and, for a folder, those of every file under it). A rename is
therefore a delete and an add. The import's rules hold: only files of the source's types, no
hidden entries, no link out of the recorded folder, no special files. Every file is opened once
without following links and checked on the open descriptor (`storage.opening`): a link swapped
in after these checks is refused, not followed; a recorded single file that became a link is
refused with a notice and a log line (its path, never its text).

The items' ids and versions before and after give the `Change` the watcher publishes. What
reads and forgets records is the store's `Index`: `SqliteIndex` here (the user's SQLite file),
`pg_index.PgIndex` for the PostgreSQL item store; the import runner is the same for both.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from loguru import logger

from knowledge_mcp.sources.storage.db import Database
from knowledge_mcp.sources.storage.files.walking import Found, Skipped, walk
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.naming import shown, stored_path
from knowledge_mcp.sources.storage.runs import BATCH_FILES, FileRecord, ImportRun, ImportSummary, ItemStore

from .batching import outermost
from .events import Change
from .folders import Target

BECAME_LINK = "the watched file became a symbolic link; not followed (import its target to watch it)"
UNDER = "(source_path = ? OR (source_path > ? AND source_path < ?))"
"""An item of the file at a path, or of any file under it ('/' + 1 is '0')."""
ITEMS_SQL = "SELECT item_id, version FROM {p}_items WHERE "
KNOWN_SQL = "SELECT path, file_hash, item_count, size, mtime_ns FROM {p}_files WHERE path IN ({{marks}})"
FILES_UNDER_SQL = "SELECT path FROM {p}_files WHERE path = ? OR (path > ? AND path < ?)"
DELETE_ITEMS_SQL = "DELETE FROM {p}_items WHERE source_path = ?"
DELETE_FILE_SQL = "DELETE FROM {p}_files WHERE path = ?"
PER_QUERY = 300


def under(path: str) -> tuple[str, str, str]:
    """The bound values of `UNDER` for `path`."""
    return path, path + "/", path + "0"


class Index(Protocol):
    """A user's source as the watcher changes it: the import runner's store and its records."""

    @property
    def importer(self) -> ItemStore: ...

    async def known(self, keys: Sequence[str]) -> dict[str, FileRecord]:
        """The records of the imported files among `keys` (stored paths)."""
        ...

    async def versions(self, keys: Sequence[str]) -> dict[str, int]:
        """The id and version of every item of the files at or under `keys`."""
        ...

    async def forget(self, gone: Sequence[str]) -> int:
        """Remove the items and records of the files at or under `gone`: items removed."""
        ...


class SqliteIndex:
    def __init__(self, importer: Importer) -> None:
        self.importer = importer

    async def known(self, keys: Sequence[str]) -> dict[str, FileRecord]:
        sql = self.importer.sql(KNOWN_SQL).replace("{marks}", ",".join("?" * len(keys)))
        return {row["path"]: row for row in await self.importer.db.fetchall(sql, keys)}

    async def versions(self, keys: Sequence[str]) -> dict[str, int]:
        return await versions(self.importer, keys)

    async def forget(self, gone: Sequence[str]) -> int:
        return await forget(self.importer.db, self.importer.p, gone)


async def reindex(index: Index, target: Target, paths: Sequence[str]) -> tuple[ImportSummary, Change]:
    """Apply the changed `paths` (all owned by `target`) to the index's store."""
    importer = index.importer
    keys = [str(stored_path(Path(p))) for p in paths]
    before = await index.versions(keys)
    summary = ImportSummary(importer.p)
    files, folders, gone = sort_paths(importer, target, paths, summary)
    await import_files(index, files, summary)
    for folder in folders:
        summary.add(await ImportRun(importer).run([folder], prune=True, on_file=None, follow=False))
    summary.pruned += await index.forget(outermost(str(stored_path(g)) for g in gone))
    after = await index.versions(keys)
    return summary, diff(target, importer.source.name, before, after)


def sort_paths(
    importer: ItemStore, target: Target, paths: Sequence[str], summary: ImportSummary
) -> tuple[list[Found], list[Path], list[Path]]:
    """The files to import, the folders to walk and the paths that are gone; a recorded file
    that became a link is refused in the summary (never read), others of no interest left out."""
    files: list[Found] = []
    folders: list[Path] = []
    gone: list[Path] = []
    for text in paths:
        path = Path(text)
        if not os.path.lexists(path):
            gone.append(path)
        elif not target.is_folder and path == target.root and path.is_symlink():
            summary.notice(path, BECAME_LINK)
            logger.warning("watch: {} refused: {}", shown(path), BECAME_LINK)
        elif path.is_dir() and not path.is_symlink():
            if not target.is_folder or path.resolve().is_relative_to(target.root):
                folders.append(path)
        elif (found := admitted(path, target, importer.source.extensions)) is not None:
            files.append(found)
    return files, folders, gone


def admitted(path: Path, target: Target, extensions: frozenset[str]) -> Found | None:
    """What the import would read for this path, if anything (the walk's rules: its type, a
    regular file, through a link only to a file inside the recorded folder; a recorded single
    file only as itself). The file is opened later without following links (`opening`), so
    what is checked here is what is read, or nothing is."""
    if path.suffix.lower() not in extensions:
        return None
    if not target.is_folder:
        return Found.at(path)
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if resolved.is_dir() or not resolved.is_relative_to(target.root):
        return None
    if any(isinstance(entry, Skipped) for entry in walk([resolved], extensions)):
        return None
    return Found(path, resolved)


async def import_files(index: Index, files: list[Found], summary: ImportSummary) -> None:
    """Re-import files through the import runner in batches, each looking up only its own
    files' records (unchanged size and time: skipped unread; unchanged hash: not written)."""
    for at in range(0, len(files), BATCH_FILES):
        part = files[at : at + BATCH_FILES]
        run = ImportRun(index.importer)
        run.known = await index.known([str(stored_path(f.path)) for f in part])
        await run.batch(part, None)
        await run.settle()
        summary.add(run.summary)


async def forget(db: Database, p: str, gone: Sequence[str]) -> int:
    """Remove the items and records of the files at or under the `gone` paths: items removed."""
    removed = 0
    for path in gone:
        rows = await db.fetchall(FILES_UNDER_SQL.format(p=p), under(path))
        files = [row["path"] for row in rows] or [path]
        async with db.transaction() as conn:
            for file in files:
                cursor = await conn.execute(DELETE_ITEMS_SQL.format(p=p), (file,))
                removed += max(cursor.rowcount, 0)
                await conn.execute(DELETE_FILE_SQL.format(p=p), (file,))
    return removed


async def versions(importer: Importer, paths: Sequence[str]) -> dict[str, int]:
    """The id and version of every item of the files at or under `paths`."""
    found: dict[str, int] = {}
    for at in range(0, len(paths), PER_QUERY):
        part = paths[at : at + PER_QUERY]
        sql = importer.sql(ITEMS_SQL) + " OR ".join([UNDER] * len(part))
        values: list[Any] = [value for path in part for value in under(path)]
        found.update({row["item_id"]: int(row["version"]) for row in await importer.db.fetchall(sql, values)})
    return found


def diff(target: Target, source: str, before: dict[str, int], after: dict[str, int]) -> Change:
    """What changed between two snapshots of item versions, as uris (pure)."""

    def uris(ids: set[str]) -> tuple[str, ...]:
        return tuple(f"{source}://{item_id}" for item_id in sorted(ids))

    kept = before.keys() & after.keys()
    return Change(
        target.user_id,
        source,
        added=uris(after.keys() - before.keys()),
        updated=uris({i for i in kept if before[i] != after[i]}),
        removed=uris(before.keys() - after.keys()),
    )
