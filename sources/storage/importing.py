"""The import runner shared by every source (DESIGN §3): the writing half.

A source parses one file into `ParsedItem`s (`items`); a run (`runs`) finds the files
(`walking`), skips the unchanged, and hands the parsed ones here in batches: `write_files`
writes many files' items, and the record of each file, in one transaction, so a crash loses at
most the open batch and a re-run completes it. `write_item` / `write_items` write items alone
(the bench's loader, tests).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import aiosqlite

from ..text import dates
from .db import Database, storage_failure
from .files.walking import iter_files
from .items import ItemParser, ParsedItem
from .naming import stored_path
from .records.fts_buffer import bulk_fts_buffer
from .records.rows import chunk_rows, item_id_for, item_values
from .runs import FileRecord, FileWork, ImportRun, ImportSummary

__all__ = ["ImportSummary", "Importer", "chunk_rows", "item_id_for", "item_values", "iter_files"]

SELECT_ITEM_SQL = "SELECT id, item_id, content_hash, version FROM {p}_items WHERE origin = ?"
SELECT_ITEMS_SQL = "SELECT id, item_id, content_hash, version, origin FROM {p}_items WHERE origin IN (?)"
LAST_ROWID_SQL = "SELECT max(id) FROM {p}_items"
INSERT_ITEM_SQL = """INSERT INTO {p}_items (item_id, origin, source_path, title, content, content_hash,
    created_at, last_modified, version, tags, meta, imported_at) VALUES (?,?,?,?,?,?,?,?,1,?,?,?)"""
INSERT_ITEMS_SQL = """INSERT INTO {p}_items (id, item_id, origin, source_path, title, content, content_hash,
    created_at, last_modified, version, tags, meta, imported_at) VALUES """
ITEM_VALUES = "(?,?,?,?,?,?,?,?,?,1,?,?,?)"
ITEMS_PER_INSERT = 1000  # 12,000 bound values
MAX_ROWID = 2**63 - 1
UPDATE_ITEM_SQL = """UPDATE {p}_items SET title=?, content=?, content_hash=?, created_at=?, last_modified=?,
    version=version+1, tags=?, meta=?, imported_at=? WHERE id=?"""
DELETE_CHUNKS_SQL = "DELETE FROM {p}_chunks WHERE item_rowid = ?"
INSERT_CHUNKS_SQL = """INSERT INTO {p}_chunks (item_rowid, chunk_index, chunk_uuid, field, start_offset,
    end_offset, title, body, meta) VALUES """
CHUNK_VALUES = "(?,?,?,?,?,?,?,?,?)"
CHUNKS_PER_INSERT = 3640  # 32,760 bound values: SQLite's limit (32,766), one statement for a batch
"""Each statement that writes chunks ends with FTS5 writing its buffered terms as a segment (then
merged): fewer, larger statements write fewer segments (docs/performance.md, Build 5, fifth pass)."""
LOOKUPS_PER_SELECT = 4000
"""Values one `IN (...)` lookup binds (a batch's files in one or two trips to SQLite's thread)."""
STALE_ITEMS_SQL = "SELECT id, origin FROM {p}_items WHERE source_path IN (?)"
DELETE_ITEM_SQL = "DELETE FROM {p}_items WHERE id = ?"
INSERT_FILES_SQL = "INSERT INTO {p}_files (path, file_hash, item_count, imported_at, size, mtime_ns) VALUES "
UPSERT_FILES_SQL = """ ON CONFLICT(path) DO UPDATE SET file_hash=excluded.file_hash,
    item_count=excluded.item_count, imported_at=excluded.imported_at, size=excluded.size,
    mtime_ns=excluded.mtime_ns"""
FILE_VALUES = "(?,?,?,?,?,?)"
FILES_PER_INSERT = 1000  # 6,000 bound values


MAX_FILE_BYTES = 200 * 1024 * 1024
"""The default size cap of one imported file (`import_max_file_mb`)."""
OPTIMIZE_MIN_CHUNKS = 10_000
"""An import writing at least this many chunks (and a tenth of the source) merges the index."""
OPTIMIZE_SQL = "INSERT INTO {p}_chunks_fts({p}_chunks_fts) VALUES('optimize')"
HAS_FOLDERS_SQL = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{p}_folders'"
RECORD_FOLDER_SQL = """INSERT INTO {p}_folders (path, is_folder, imported_at) VALUES (?,?,?)
    ON CONFLICT(path) DO UPDATE SET is_folder=excluded.is_folder, imported_at=excluded.imported_at"""
COUNT_CHUNKS_SQL = "SELECT COUNT(*) FROM {p}_chunks"
KNOWN_FILES_SQL = "SELECT path, file_hash, item_count, size, mtime_ns FROM {p}_files"
DELETE_FILE_ITEMS_SQL = "DELETE FROM {p}_items WHERE source_path = ?"
DELETE_FILE_SQL = "DELETE FROM {p}_files WHERE path = ?"


class Importer:
    def __init__(self, source: ItemParser, db: Database, *, max_file_bytes: int = MAX_FILE_BYTES) -> None:
        self.source = source
        self.db = db
        self.max_file_bytes = max_file_bytes
        """Files larger than this are skipped with a notice (`import_max_file_mb`)."""
        self.p = source.name
        self.chunks_written = 0
        """Chunks this importer has written (new and changed items)."""

    def sql(self, template: str) -> str:
        return template.format(p=self.p)

    async def run(
        self, paths: Sequence[Path], *, prune: bool = False, on_file: Callable[[Path], None] | None = None
    ) -> ImportSummary:
        """Import files and folders (`runs.ImportRun`): the summary of what happened to each."""
        summary = await ImportRun(self).run(paths, prune=prune, on_file=on_file)
        await self.optimize_if_large()
        await self.record_paths(paths)
        return summary

    async def known_files(self) -> dict[str, FileRecord]:
        return {row["path"]: row for row in await self.db.fetchall(self.sql(KNOWN_FILES_SQL))}

    async def prune_file(self, stored: str) -> int:
        async with self.db.transaction() as conn:
            cursor = await conn.execute(self.sql(DELETE_FILE_ITEMS_SQL), (stored,))
            await conn.execute(self.sql(DELETE_FILE_SQL), (stored,))
            return max(cursor.rowcount, 0)

    def fatal(self, exc: BaseException) -> Exception | None:
        return storage_failure(exc, self.db.path)

    async def record_paths(self, paths: Sequence[Path]) -> None:
        """Remember the files and folders this import was given, when the source's schema has
        a `<p>_folders` table (notes: where new notes are written)."""
        if await self.db.fetchone(self.sql(HAS_FOLDERS_SQL)) is None:
            return
        now = dates.now()
        rows = [(str(stored_path(p.resolve())), int(p.is_dir()), now) for p in paths if p.exists()]
        async with self.db.transaction() as conn:
            await conn.executemany(self.sql(RECORD_FOLDER_SQL), rows)

    async def optimize_if_large(self) -> bool:
        """After a large import, merge the FTS index's segments into one (FTS5 `optimize`).

        A bulk load leaves the index in several segments, and every query term is looked up in
        each, so one segment makes a large source's searches faster (docs/performance.md, fourth pass).
        It rewrites the whole index (seconds at that size), so only an import that wrote
        `OPTIMIZE_MIN_CHUNKS` chunks and a tenth of the source does it; smaller ones leave it to
        FTS5's own incremental merging. One transaction: a crash leaves the index as it was."""
        if self.chunks_written < OPTIMIZE_MIN_CHUNKS:
            return False
        row = await self.db.fetchone(self.sql(COUNT_CHUNKS_SQL))
        if row is None or self.chunks_written * 10 < int(row[0]):
            return False
        async with self.db.transaction() as conn:
            await conn.execute(self.sql(OPTIMIZE_SQL))
        self.chunks_written = 0
        return True

    async def write_item(self, path: Path, item: ParsedItem) -> str:
        """Insert or update one item and its chunks in one transaction: added/updated/unchanged."""
        origin = item.origin_in(path)
        content_hash = item.content_hash()
        existing = await self.db.fetchone(self.sql(SELECT_ITEM_SQL), (origin,))
        if existing and existing["content_hash"] == content_hash:
            return "unchanged"
        async with self.db.transaction() as conn:
            await self._store(conn, path, item, origin, content_hash, existing)
        return "updated" if existing else "added"

    async def write_items(self, items: Sequence[tuple[Path, ParsedItem]]) -> list[str]:
        """`write_item` for many items in ONE transaction: the same rows, in the same order.

        For bulk loads (the bench's million-chunk corpus), where a commit and several thread
        hops per item cost more than the item. New items go in runs: one `executemany` for
        the items, one lookup of their rowids, one `executemany` for all their chunks; a
        changed item is updated in place between runs, so rowids come out exactly as item by
        item. All or nothing: an error rolls the whole batch back. A batch naming one origin
        twice is written item by item instead, in the same transaction.
        """
        async with self.db.transaction() as conn, bulk_fts_buffer(conn, self.p, len(items)):
            return await self._write_items_in(conn, items)

    async def _write_items_in(
        self, conn: aiosqlite.Connection, items: Sequence[tuple[Path, ParsedItem]]
    ) -> list[str]:
        """`write_items` inside the caller's transaction."""
        prepared = [(path, item, item.origin_in(path)) for path, item in items]
        if len({origin for _, _, origin in prepared}) < len(prepared):
            return [await self._write_one_in(conn, path, item, origin) for path, item, origin in prepared]
        hashes = [item.content_hash() for _, item, _ in prepared]
        outcomes: list[str] = []
        existing = await self._rows_by_origin(conn, SELECT_ITEMS_SQL, [o for _, _, o in prepared])
        run: list[tuple[Path, ParsedItem, str, str]] = []
        for (path, item, origin), content_hash in zip(prepared, hashes, strict=True):
            row = existing.get(origin)
            if row is None:
                run.append((path, item, origin, content_hash))
                outcomes.append("added")
                continue
            await self._insert_run(conn, run)
            run = []
            if row["content_hash"] == content_hash:
                outcomes.append("unchanged")
            else:
                await self._store(conn, path, item, origin, content_hash, row)
                outcomes.append("updated")
        await self._insert_run(conn, run)
        return outcomes

    async def _write_one_in(
        self, conn: aiosqlite.Connection, path: Path, item: ParsedItem, origin: str
    ) -> str:
        """One item inside the caller's transaction (a batch naming an origin twice: the later wins)."""
        content_hash = item.content_hash()
        async with conn.execute(self.sql(SELECT_ITEM_SQL), (origin,)) as cursor:
            existing = await cursor.fetchone()
        if existing and existing["content_hash"] == content_hash:
            return "unchanged"
        await self._store(conn, path, item, origin, content_hash, existing)
        return "updated" if existing else "added"

    async def _rows_by_origin(
        self, conn: aiosqlite.Connection, template: str, origins: list[str]
    ) -> dict[str, aiosqlite.Row]:
        found: dict[str, aiosqlite.Row] = {}
        for at in range(0, len(origins), LOOKUPS_PER_SELECT):
            part = origins[at : at + LOOKUPS_PER_SELECT]
            sql = self.sql(template).replace("(?)", f"({','.join('?' * len(part))})")
            async with conn.execute(sql, part) as cursor:
                found.update({row["origin"]: row for row in await cursor.fetchall()})
        return found

    async def _insert_run(
        self, conn: aiosqlite.Connection, run: list[tuple[Path, ParsedItem, str, str]]
    ) -> None:
        """New items (origins not in the table) and then all their chunks, in the given order.

        The items get the rowids SQLite would give them one by one (one more than the largest
        so far: the caller's transaction holds the write lock), named in multi-row INSERTs, so
        their chunks need no lookup of them (docs/performance.md, "Import")."""
        if not run:
            return
        item_ids = [item_id_for(origin) for _, _, origin, _ in run]
        async with conn.execute(self.sql(LAST_ROWID_SQL)) as cursor:
            row = await cursor.fetchone()
        last = int(row[0]) if row is not None and row[0] is not None else 0
        if last + len(run) > MAX_ROWID:  # SQLite would pick unused rowids at random: let it
            await self._insert_run_one_by_one(conn, run, item_ids)
            return
        now = dates.now()
        rowids = range(last + 1, last + 1 + len(run))
        rows = [
            (rowid, item_id, origin, str(path), *item_values(item, content_hash, now))
            for rowid, item_id, (path, item, origin, content_hash) in zip(rowids, item_ids, run, strict=True)
        ]
        await self._insert_values(conn, self.sql(INSERT_ITEMS_SQL), ITEM_VALUES, rows, ITEMS_PER_INSERT)
        chunks: list[tuple[Any, ...]] = []
        for rowid, item_id, (_, item, _, _) in zip(rowids, item_ids, run, strict=True):
            chunks += self.chunk_rows(rowid, item_id, item)
        await self._insert_chunks(conn, chunks)

    async def _insert_run_one_by_one(
        self, conn: aiosqlite.Connection, run: list[tuple[Path, ParsedItem, str, str]], item_ids: list[str]
    ) -> None:
        now = dates.now()
        for item_id, (path, item, origin, content_hash) in zip(item_ids, run, strict=True):
            values = (item_id, origin, str(path), *item_values(item, content_hash, now))
            cursor = await conn.execute(self.sql(INSERT_ITEM_SQL), values)
            await self._insert_chunks(conn, self.chunk_rows(cursor.lastrowid, item_id, item))

    async def _insert_chunks(self, conn: aiosqlite.Connection, rows: list[tuple[Any, ...]]) -> None:
        """Chunk rows in multi-row INSERTs: the FTS trigger then runs inside a few statements
        instead of one per row, much faster for FTS5 (docs/performance.md, "Import")."""
        await self._insert_values(conn, self.sql(INSERT_CHUNKS_SQL), CHUNK_VALUES, rows, CHUNKS_PER_INSERT)

    @staticmethod
    async def _insert_values(
        conn: aiosqlite.Connection,
        head: str,
        values: str,
        rows: list[tuple[Any, ...]],
        per_insert: int,
        tail: str = "",
    ) -> None:
        """`head` + `values` once per row + `tail`, `per_insert` rows a statement: one step of
        SQLite each, where `executemany` takes one (and a hand-over of the GIL) per row."""
        for at in range(0, len(rows), per_insert):
            part = rows[at : at + per_insert]
            sql = head + ",".join([values] * len(part)) + tail
            await conn.execute(sql, [v for row in part for v in row])

    async def _store(
        self,
        conn: aiosqlite.Connection,
        path: Path,
        item: ParsedItem,
        origin: str,
        content_hash: str,
        existing: aiosqlite.Row | None,
    ) -> None:
        """The item row and its chunks, inside the caller's transaction."""
        item_id = existing["item_id"] if existing else item_id_for(origin)
        values = item_values(item, content_hash)
        if existing:
            rowid = existing["id"]
            await conn.execute(self.sql(UPDATE_ITEM_SQL), (*values, rowid))
            await conn.execute(self.sql(DELETE_CHUNKS_SQL), (rowid,))
        else:
            cursor = await conn.execute(self.sql(INSERT_ITEM_SQL), (item_id, origin, str(path), *values))
            rowid = cursor.lastrowid
        await self._insert_chunks(conn, self.chunk_rows(rowid, item_id, item))

    def chunk_rows(self, rowid: int | None, item_id: str, item: ParsedItem) -> list[tuple[Any, ...]]:
        rows = chunk_rows(rowid, item_id, item)
        self.chunks_written += len(rows)
        return rows

    async def write_files(self, works: Sequence[FileWork]) -> list[list[str]]:
        """Many files' items and their records in `<p>_files`, in ONE transaction (all or
        nothing): each file's outcomes (added/updated/unchanged per item). A file's items that
        it no longer contains are deleted; a work without items (content unchanged) only
        records the file's size and time again."""
        pairs = [(work.key, item) for work in works for item in work.items or ()]
        async with self.db.transaction() as conn:
            async with bulk_fts_buffer(conn, self.p, len(pairs)):
                outcomes = await self._write_items_in(conn, pairs)
            await self._record_files(conn, works)
        per_file: list[list[str]] = []
        for work in works:
            count = len(work.items or ())
            per_file.append(outcomes[:count])
            outcomes = outcomes[count:]
        return per_file

    async def _record_files(self, conn: aiosqlite.Connection, works: Sequence[FileWork]) -> None:
        """Drop items the files no longer contain, then record the files as imported."""
        changed = [work for work in works if work.items is not None]
        keep = {i.origin_in(w.key) for w in changed for i in w.items or ()}
        rows = await self._rows_by_origin(conn, STALE_ITEMS_SQL, [str(w.key) for w in changed])
        stale = [(row["id"],) for origin, row in rows.items() if origin not in keep]
        await conn.executemany(self.sql(DELETE_ITEM_SQL), stale)
        now = dates.now()
        records = [
            (
                str(w.key),
                w.file_hash,
                len(w.items) if w.items is not None else w.item_count,
                now,
                w.size,
                w.mtime_ns,
            )
            for w in works
        ]
        await self._insert_values(
            conn, self.sql(INSERT_FILES_SQL), FILE_VALUES, records, FILES_PER_INSERT, UPSERT_FILES_SQL
        )
