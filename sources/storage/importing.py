"""The import runner shared by every source (DESIGN §3).

A source parses one file into `ParsedItem`s (`items`); this module does the rest: walking folders,
skipping unchanged files by hash, writing each item in its own transaction, recording the
file only after all its items are in (so a crash mid-file is completed by a re-run), pruning
items whose file is gone, and the summary.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from dataclasses import field as default
from pathlib import Path
from typing import Any

import aiosqlite

from ..errors import ImportFileError
from ..text import dates
from .chunking import chunk_text
from .db import Database
from .items import ChunkSpan, ItemParser, ParsedFile, ParsedItem


@dataclass
class ImportSummary:
    source: str
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    pruned: int = 0
    files_seen: int = 0
    files_failed: int = 0
    failures: list[dict[str, str]] = default(default_factory=list)
    notices: list[dict[str, str]] = default(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @property
    def exit_code(self) -> int:
        return 2 if self.files_failed else 0


SELECT_FILE_SQL = "SELECT file_hash FROM {p}_files WHERE path = ?"
COUNT_ITEMS_SQL = "SELECT COUNT(*) FROM {p}_items WHERE source_path = ?"
SELECT_ITEM_SQL = "SELECT id, item_id, content_hash, version FROM {p}_items WHERE origin = ?"
SELECT_ITEMS_SQL = "SELECT id, item_id, content_hash, version, origin FROM {p}_items WHERE origin IN (?)"
ROWIDS_SQL = "SELECT id, origin FROM {p}_items WHERE origin IN (?)"
INSERT_ITEM_SQL = """INSERT INTO {p}_items (item_id, origin, source_path, title, content, content_hash,
    created_at, last_modified, version, tags, meta, imported_at) VALUES (?,?,?,?,?,?,?,?,1,?,?,?)"""
UPDATE_ITEM_SQL = """UPDATE {p}_items SET title=?, content=?, content_hash=?, created_at=?, last_modified=?,
    version=version+1, tags=?, meta=?, imported_at=? WHERE id=?"""
DELETE_CHUNKS_SQL = "DELETE FROM {p}_chunks WHERE item_rowid = ?"
INSERT_CHUNK_SQL = """INSERT INTO {p}_chunks (item_rowid, chunk_index, chunk_uuid, field, start_offset,
    end_offset, title, body, meta) VALUES (?,?,?,?,?,?,?,?,?)"""
STALE_ITEMS_SQL = "SELECT id, origin FROM {p}_items WHERE source_path = ?"
DELETE_ITEM_SQL = "DELETE FROM {p}_items WHERE id = ?"
UPSERT_FILE_SQL = """INSERT INTO {p}_files (path, file_hash, item_count, imported_at) VALUES (?,?,?,?)
    ON CONFLICT(path) DO UPDATE SET file_hash=excluded.file_hash, item_count=excluded.item_count,
    imported_at=excluded.imported_at"""
KNOWN_FILES_SQL = "SELECT path FROM {p}_files"
DELETE_FILE_ITEMS_SQL = "DELETE FROM {p}_items WHERE source_path = ?"
DELETE_FILE_SQL = "DELETE FROM {p}_files WHERE path = ?"


def item_id_for(origin: str) -> str:
    return hashlib.sha256(origin.encode()).hexdigest()[:16]


def iter_files(paths: Sequence[Path], extensions: frozenset[str]) -> Iterator[Path]:
    """Files with a supported extension, folders walked in sorted order, hidden entries skipped."""
    for path in paths:
        path = path.resolve()
        if path.is_file():
            yield path
        elif path.is_dir():
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(path)
                if any(part.startswith(".") for part in rel.parts):
                    continue
                if child.is_file() and child.suffix.lower() in extensions:
                    yield child
        else:
            raise ImportFileError(f"{path}: no such file or folder")


def _item_values(item: ParsedItem, content_hash: str) -> tuple[Any, ...]:
    """The columns an insert and an update of an item both set, in both statements' order:
    title, content, content_hash, created_at, last_modified, tags, meta, imported_at."""
    return (
        item.title,
        item.content,
        content_hash,
        item.created_at,
        item.last_modified,
        json.dumps(item.tags, ensure_ascii=False),
        json.dumps(item.meta, ensure_ascii=False, default=str),
        dates.now(),
    )


OPTIMIZE_MIN_CHUNKS = 10_000
"""An import writing at least this many chunks (and a tenth of the source) merges the index."""
OPTIMIZE_SQL = "INSERT INTO {p}_chunks_fts({p}_chunks_fts) VALUES('optimize')"
COUNT_CHUNKS_SQL = "SELECT COUNT(*) FROM {p}_chunks"


class Importer:
    def __init__(self, source: ItemParser, db: Database) -> None:
        self.source = source
        self.db = db
        self.p = source.name
        self.chunks_written = 0
        """Chunks this importer has written (new and changed items)."""

    def sql(self, template: str) -> str:
        return template.format(p=self.p)

    async def run(
        self, paths: Sequence[Path], *, prune: bool = False, on_file: Callable[[Path], None] | None = None
    ) -> ImportSummary:
        summary = ImportSummary(self.p)
        roots = [p.resolve() for p in paths]
        for root in roots:
            if not root.exists():
                summary.files_failed += 1
                summary.failures.append({"path": str(root), "reason": "no such file or folder"})
        files = list(iter_files([r for r in roots if r.exists()], self.source.extensions))
        for path in files:
            summary.files_seen += 1
            await self.import_file(path, summary)
            if on_file:
                on_file(path)
        if prune:
            await self.prune(roots, summary)
        await self.optimize_if_large()
        return summary

    async def optimize_if_large(self) -> bool:
        """After a large import, merge the FTS index's segments into one (FTS5 `optimize`).

        A bulk load leaves the index in several segments, and every query term is looked up in
        each: at 320,000 chunks one segment makes searches 20-30 % faster (docs/performance.md).
        It rewrites the whole index (~10 s at that size), so only an import that wrote
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

    async def import_file(self, path: Path, summary: ImportSummary) -> None:
        try:
            raw = await asyncio.to_thread(path.read_bytes)
        except OSError as exc:
            summary.files_failed += 1
            summary.failures.append({"path": str(path), "reason": exc.strerror or str(exc)})
            return
        file_hash = hashlib.sha256(raw).hexdigest()
        known = await self.db.fetchone(self.sql(SELECT_FILE_SQL), (str(path),))
        if known and known[0] == file_hash:
            row = await self.db.fetchone(self.sql(COUNT_ITEMS_SQL), (str(path),))
            summary.unchanged += int(row[0]) if row else 0
            return
        if not raw.strip():
            summary.skipped += 1
            summary.notices.append({"path": str(path), "reason": "empty file skipped"})
            await self.replace_file_items(path, [], file_hash)
            return
        try:
            items = await asyncio.to_thread(self.source.parse_file, path, raw)
        except Exception as exc:  # one bad file is reported; the rest go on
            summary.files_failed += 1
            summary.failures.append({"path": str(path), "reason": f"{type(exc).__name__}: {exc}"[:300]})
            return
        parts_failed = isinstance(items, ParsedFile) and _report_parts(path, items, summary)
        if not items and not parts_failed:
            summary.skipped += 1
            summary.notices.append({"path": str(path), "reason": "no importable content"})
        for item in items:
            outcome = await self.write_item(path, item)
            setattr(summary, outcome, getattr(summary, outcome) + 1)
        await self.replace_file_items(path, items, file_hash)

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
        twice is written item by item instead.
        """
        prepared = [(path, item, item.origin_in(path)) for path, item in items]
        if len({origin for _, _, origin in prepared}) < len(prepared):
            return [await self.write_item(path, item) for path, item in items]
        hashes = [item.content_hash() for _, item, _ in prepared]
        outcomes: list[str] = []
        async with self.db.transaction() as conn:
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

    async def _rows_by_origin(
        self, conn: aiosqlite.Connection, template: str, origins: list[str]
    ) -> dict[str, aiosqlite.Row]:
        found: dict[str, aiosqlite.Row] = {}
        for at in range(0, len(origins), 500):  # well under SQLite's bound-parameter limit
            part = origins[at : at + 500]
            sql = self.sql(template).replace("(?)", f"({','.join('?' * len(part))})")
            async with conn.execute(sql, part) as cursor:
                found.update({row["origin"]: row for row in await cursor.fetchall()})
        return found

    async def _insert_run(
        self, conn: aiosqlite.Connection, run: list[tuple[Path, ParsedItem, str, str]]
    ) -> None:
        """New items (origins not in the table) and then all their chunks, in the given order."""
        if not run:
            return
        rows = [
            (item_id_for(origin), origin, str(path), *_item_values(item, content_hash))
            for path, item, origin, content_hash in run
        ]
        await conn.executemany(self.sql(INSERT_ITEM_SQL), rows)
        ids = await self._rows_by_origin(conn, ROWIDS_SQL, [origin for _, _, origin, _ in run])
        chunks: list[tuple[Any, ...]] = []
        for _, item, origin, _ in run:
            chunks += self.chunk_rows(ids[origin]["id"], item_id_for(origin), item)
        await conn.executemany(self.sql(INSERT_CHUNK_SQL), chunks)

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
        values = _item_values(item, content_hash)
        if existing:
            rowid = existing["id"]
            await conn.execute(self.sql(UPDATE_ITEM_SQL), (*values, rowid))
            await conn.execute(self.sql(DELETE_CHUNKS_SQL), (rowid,))
        else:
            cursor = await conn.execute(self.sql(INSERT_ITEM_SQL), (item_id, origin, str(path), *values))
            rowid = cursor.lastrowid
        await conn.executemany(self.sql(INSERT_CHUNK_SQL), self.chunk_rows(rowid, item_id, item))

    def chunk_rows(self, rowid: int | None, item_id: str, item: ParsedItem) -> list[tuple[Any, ...]]:
        spans = item.chunks
        if spans is None:
            # An item with no body (a note of only front matter) still gets one chunk, so its
            # title is searchable.
            spans = [ChunkSpan(c.start, c.end) for c in chunk_text(item.content)] or [
                ChunkSpan(0, len(item.content))
            ]
        rows = []
        for index, span in enumerate(spans):
            body = item.content[span.start : span.end]
            uuid = hashlib.sha256(f"{item_id}\x00{span.field or ''}\x00{body}".encode()).hexdigest()[:24]
            rows.append(
                (
                    rowid,
                    index,
                    uuid,
                    span.field,
                    span.start,
                    span.end,
                    item.title,
                    body,
                    json.dumps(span.meta, ensure_ascii=False, default=str),
                )
            )
        self.chunks_written += len(rows)
        return rows

    async def replace_file_items(self, path: Path, items: list[ParsedItem], file_hash: str) -> None:
        """Drop items the file no longer contains, then record the file as imported."""
        keep = {i.origin_in(path) for i in items}
        stale = [
            r["id"]
            for r in await self.db.fetchall(self.sql(STALE_ITEMS_SQL), (str(path),))
            if r["origin"] not in keep
        ]
        async with self.db.transaction() as conn:
            for rowid in stale:
                await conn.execute(self.sql(DELETE_ITEM_SQL), (rowid,))
            await conn.execute(self.sql(UPSERT_FILE_SQL), (str(path), file_hash, len(items), dates.now()))

    async def prune(self, roots: list[Path], summary: ImportSummary) -> None:
        for row in await self.db.fetchall(self.sql(KNOWN_FILES_SQL)):
            path = Path(row["path"])
            under = any(path == r or r in path.parents for r in roots)
            if under and not path.exists():
                async with self.db.transaction() as conn:
                    cursor = await conn.execute(self.sql(DELETE_FILE_ITEMS_SQL), (str(path),))
                    summary.pruned += max(cursor.rowcount, 0)
                    await conn.execute(self.sql(DELETE_FILE_SQL), (str(path),))


def _report_parts(path: Path, parsed: ParsedFile, summary: ImportSummary) -> bool:
    """Report a file's failed parts (one line each; the file counts as failed once) and its
    notices; whether any part failed."""
    if parsed.failures:
        summary.files_failed += 1
    for problem in parsed.failures:
        summary.failures.append({"path": f"{path} ({problem.part})", "reason": problem.reason[:300]})
    for problem in parsed.notices:
        summary.notices.append({"path": f"{path} ({problem.part})", "reason": problem.reason[:300]})
    return bool(parsed.failures)
