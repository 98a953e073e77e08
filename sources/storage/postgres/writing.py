"""Items written to the PostgreSQL store with their bm25 postings and statistics (`schema.py`).

The import path is the SQLite one up to the write: `runs.ImportRun` walks, skips and parses
(a source's `parse_file`), `importing.chunk_rows` cuts the chunks and `importing.item_values`
gives the stored columns; `PgItemWriter` is the `runs.ItemStore` it writes to. Each item is
written in one transaction with its chunks, their postings (FTS5's tokens: `tokens.py`), the
terms' document counts and the source's chunk and token counts, so a search never sees an item
without its statistics. Replacing an item first takes its old postings out of the counts; an
unchanged item (same content hash) is skipped. A transaction's postings and counts are written
together just before it commits (`writers/batch.py`: three statements for the batch, not per
item); new items' chunks are cut and tokenized in a thread while the server inserts them. The
statistics row is locked first: one writer at a time per user and source, as SQLite, and no
two writers can deadlock on the term counts.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import PoolTimeout

from ...errors import SourceUnavailableError
from ...text import dates
from ..db import validate_user_id
from ..importing import MAX_FILE_BYTES, chunk_rows, item_id_for, item_values
from ..items import ItemParser, ParsedItem
from ..runs import FileRecord, FileWork, ImportRun, ImportSummary
from .pool import PgDatabase, forget_generation
from .postings import blocks
from .schema import as_user, ensure_user
from .tokens import Indexed, index
from .writers import arrays, batched
from .writers.analyzing import analyze_after
from .writers.batch import Batch
from .writers.folders import record_paths

STATS_ROW_SQL = """INSERT INTO pg_corpus_stats (user_id, source) VALUES (%s, %s)
    ON CONFLICT (user_id, source) DO NOTHING"""
LOCK_STATS_SQL = """UPDATE pg_corpus_stats SET generation = generation + 1
    WHERE user_id = %s AND source = %s RETURNING chunks"""
"""Locks the statistics row (one writer per user and source) and moves the source's generation:
a memory copy of its index made before this transaction commits is never used after it."""
UPDATE_ITEM_SQL = """UPDATE pg_items SET title = %s, content = %s, content_hash = %s, created_at = %s,
    last_modified = %s, tags = %s::jsonb, meta = %s::jsonb, imported_at = %s, version = version + 1
    WHERE user_id = %s AND id = %s"""
DELETE_ITEM_SQL = "DELETE FROM pg_items WHERE user_id = %s AND id = %s"
ADD_DOCS_SQL = """INSERT INTO pg_term_docs (user_id, source, lexeme, docs)
    SELECT %s, %s, u.lexeme, u.docs FROM unnest(%s::text[], %s::bigint[]) AS u(lexeme, docs)
    ORDER BY u.lexeme
    ON CONFLICT (user_id, source, lexeme) DO UPDATE SET docs = pg_term_docs.docs + excluded.docs"""
ADD_STATS_SQL = """UPDATE pg_corpus_stats SET chunks = chunks + %s, tokens = tokens + %s
    WHERE user_id = %s AND source = %s"""
FORGET_TERMS_SQL = """DELETE FROM pg_term_docs
    WHERE user_id = %s AND source = %s AND lexeme = ANY(%s::text[]) AND docs <= 0"""
REMOVE_CHUNKS_SQL = "DELETE FROM pg_chunks WHERE user_id = %s AND item = %s RETURNING id, tokens, title, body"
DELETE_VECTORS_SQL = "DELETE FROM pg_chunk_vectors WHERE user_id = %s AND source = %s AND item = %s"
DELETE_CHUNKS_SQL = "DELETE FROM pg_chunks WHERE user_id = %s AND item = %s"
KNOWN_FILES_SQL = """SELECT path, file_hash, item_count, size, mtime_ns FROM pg_files
    WHERE user_id = %s AND source = %s"""
UPSERT_FILE_SQL = """INSERT INTO pg_files (user_id, source, path, file_hash, item_count, imported_at, size,
    mtime_ns) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (user_id, source, path) DO UPDATE SET file_hash = excluded.file_hash,
    item_count = excluded.item_count, imported_at = excluded.imported_at, size = excluded.size,
    mtime_ns = excluded.mtime_ns"""
DELETE_FILE_SQL = "DELETE FROM pg_files WHERE user_id = %s AND source = %s AND path = %s"
ITEMS_OF_PATHS_SQL = """SELECT id, origin FROM pg_items
    WHERE user_id = %s AND source = %s AND source_path = ANY(%s::text[])"""


class PgItemWriter:
    """Writes one user's items of one source to the PostgreSQL store. With `bm25=False` only
    items and chunks are written (no postings or statistics: to measure their cost)."""

    def __init__(
        self,
        db: PgDatabase,
        source: ItemParser,
        user_id: str,
        *,
        bm25: bool = True,
        max_file_bytes: int = MAX_FILE_BYTES,
    ) -> None:
        self.db = db
        self.source = source
        self.p = source.name
        self.user_id = validate_user_id(user_id)
        self.bm25 = bm25
        self.max_file_bytes = max_file_bytes
        self.written = 0
        """Chunks this writer has written (new and replaced items'): a large run ends with ANALYZE."""

    async def run(self, paths: Sequence[Path], *, prune: bool = False) -> ImportSummary:
        """Import files and folders exactly as `Importer.run` does (`runs.ImportRun`), into
        PostgreSQL."""
        await ensure_user(self.db, self.user_id)
        summary = await ImportRun(self).run(paths, prune=prune, on_file=None)
        await record_paths(self.db, self.user_id, self.p, paths)  # where notes go, what --watch watches
        await analyze_after(self.db, self.user_id, self.written)  # the planner's statistics, fresh
        return summary

    async def known_files(self) -> dict[str, FileRecord]:
        async with self.db.transaction() as conn:
            await as_user(conn, self.user_id)
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(KNOWN_FILES_SQL, (self.user_id, self.p))
            return {row["path"]: row for row in await cursor.fetchall()}

    async def write_files(self, works: Sequence[FileWork]) -> list[list[str]]:
        """Many files' items and their records in ONE transaction; each file's outcomes. A
        file's items that it no longer contains are deleted."""
        await ensure_user(self.db, self.user_id)
        per_file: list[list[str]] = []
        async with self._transaction() as (conn, batch):
            for work in works:
                items = work.items or []
                per_file.append(
                    await self._write_all(conn, batch, [(work.key, item, None) for item in items])
                )
                if work.items is not None:
                    keep = {item.origin_in(work.key) for item in items}
                    await self._delete(conn, batch, [str(work.key)], keep)
                count = len(work.items) if work.items is not None else work.item_count
                record = (self.user_id, self.p, str(work.key), work.file_hash, count, dates.now())
                await conn.execute(UPSERT_FILE_SQL, (*record, work.size, work.mtime_ns))
        return per_file

    async def prune_file(self, stored: str) -> int:
        async with self._transaction() as (conn, batch):
            gone = await self._delete(conn, batch, [stored], set())
            await conn.execute(DELETE_FILE_SQL, (self.user_id, self.p, stored))
        return gone

    def fatal(self, exc: BaseException) -> Exception | None:
        """A lost or refused connection ends the run; any other error is one file's failure."""
        if isinstance(exc, psycopg.OperationalError | PoolTimeout):
            return SourceUnavailableError(f"PostgreSQL at {self.db.name}: {type(exc).__name__}")
        return None

    async def write_item(self, path: Path, item: ParsedItem) -> str:
        """Insert or update one item in its own transaction: added, updated or unchanged."""
        return (await self.write_items([(path, item)]))[0]

    async def write_items(
        self, items: Sequence[tuple[Path, ParsedItem]], hashes: Sequence[str] | None = None
    ) -> list[str]:
        """Several items in ONE transaction (all or nothing), in order; each one's outcome.
        `hashes`: the items' content hashes as another store recorded them (a copy keeps them,
        so the next import of the same files skips them as unchanged)."""
        await ensure_user(self.db, self.user_id)
        known = list(hashes) if hashes is not None else [None] * len(items)
        pairs = [(path, item, content_hash) for (path, item), content_hash in zip(items, known, strict=True)]
        async with self._transaction() as (conn, batch):
            return await self._write_all(conn, batch, pairs)

    async def record_files(self, rows: Sequence[tuple[str, str, int, str, int | None, int | None]]) -> None:
        """Record imported files as another store did: (path, file hash, item count, imported
        at, size, mtime_ns)."""
        await ensure_user(self.db, self.user_id)
        async with self._transaction() as (conn, _):
            for row in rows:
                await conn.execute(UPSERT_FILE_SQL, (self.user_id, self.p, *row))

    async def _delete(self, conn: Any, batch: Batch, paths: Sequence[str], keep: set[str]) -> int:
        found = await conn.execute(ITEMS_OF_PATHS_SQL, (self.user_id, self.p, list(paths)))
        rows = [r for r in await found.fetchall() if r[1] not in keep]
        for rowid, _ in rows:
            await self._remove_chunks(conn, batch, rowid)
            await conn.execute(DELETE_ITEM_SQL, (self.user_id, rowid))
        return len(rows)

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[tuple[Any, Batch]]:
        """One transaction as this user, its statistics row locked; the batch's postings and
        counts are written before it commits."""
        async with self.db.transaction() as conn:
            await as_user(conn, self.user_id)
            await conn.execute(STATS_ROW_SQL, (self.user_id, self.p))
            await conn.execute(LOCK_STATS_SQL, (self.user_id, self.p))
            batch = Batch()
            yield conn, batch
            await self._flush(conn, batch)
        forget_generation(self.db, self.user_id, self.p)  # committed: the generation noted is old

    async def _flush(self, conn: Any, batch: Batch) -> None:
        """Write the batch's postings, add its term counts and sizes, and empty it."""
        if batch.postings:
            await blocks.append(conn, self.user_id, self.p, batch.postings, batch.chunks_of)
        if batch.docs:
            docs = sorted(batch.docs.items())
            lexemes, counts = arrays.texts(d for d, _ in docs), arrays.numbers(n for _, n in docs)
            await conn.execute(ADD_DOCS_SQL, (self.user_id, self.p, lexemes, counts))
        if batch.gone:
            await conn.execute(FORGET_TERMS_SQL, (self.user_id, self.p, sorted(batch.gone)))
        if batch.chunks or batch.tokens:
            await conn.execute(ADD_STATS_SQL, (batch.chunks, batch.tokens, self.user_id, self.p))
        batch.clear()

    async def _write_all(
        self, conn: Any, batch: Batch, pairs: Sequence[tuple[Path, ParsedItem, str | None]]
    ) -> list[str]:
        """Insert or update items in order (a content hash given is kept): each one's outcome.
        Their stored rows are read at once and runs of new items inserted together
        (`writers/batched.py`); an item that replaces a stored one is written alone."""
        origins = [item.origin_in(path) for path, item, _ in pairs]
        if len(set(origins)) < len(origins):  # one origin twice: each write sees the one before
            return [(await self._write_all(conn, batch, [pair]))[0] for pair in pairs]
        stored = await batched.existing(conn, self.user_id, self.p, origins) if pairs else {}
        outcomes: list[str] = []
        new: list[tuple[Path, ParsedItem, str, str]] = []
        for (path, item, known), origin in zip(pairs, origins, strict=True):
            content_hash = known or item.content_hash()
            found = stored.get(origin)
            if found is None:
                new.append((path, item, origin, content_hash))
                outcomes.append("added")
            elif found[2] == content_hash:
                outcomes.append("unchanged")
            else:
                await self._add(conn, batch, new)  # the rowids in the order written
                new = []
                rowid, item_id = found[0], found[1]
                await self._remove_chunks(conn, batch, rowid)
                await conn.execute(UPDATE_ITEM_SQL, (*item_values(item, content_hash), self.user_id, rowid))
                await self._insert_chunks(conn, batch, chunk_rows(rowid, item_id, item))
                outcomes.append("updated")
        await self._add(conn, batch, new)
        return outcomes

    async def _add(self, conn: Any, batch: Batch, new: list[tuple[Path, ParsedItem, str, str]]) -> None:
        """Insert new items (path, item, origin, content hash) and their chunks, two statements.
        Their chunks are cut and tokenized in a thread while the server inserts the items."""
        if not new:
            return
        rows = [
            (item_id_for(origin), origin, str(path), *item_values(item, h)) for path, item, origin, h in new
        ]
        chunking = asyncio.ensure_future(
            asyncio.to_thread(batched.chunked, [(r[0], n[1]) for r, n in zip(rows, new, strict=True)])
        )
        try:
            rowids = await batched.insert_items(conn, self.user_id, self.p, rows)
        finally:
            pieces, indexed = await chunking
        chunks = [
            (rowids[origin], *c[1:])
            for (_, _, origin, _), piece in zip(new, pieces, strict=True)
            for c in piece
        ]
        await self._insert_chunks(conn, batch, chunks, indexed)

    async def _insert_chunks(
        self, conn: Any, batch: Batch, rows: list[tuple[Any, ...]], indexed: Indexed | None = None
    ) -> None:
        """Insert chunk rows (of one or more items) and queue their postings and counts
        (`indexed`: their postings, if already tokenized)."""
        if indexed is None:
            indexed = index([(row[6], row[7]) for row in rows])
        ids = await batched.chunk_ids(conn, self.user_id, self.p, rows, indexed.lengths)
        self.written += len(rows)
        if self.bm25:
            items = [int(row[0]) for row in rows]
            batch.add(
                indexed, [ids[(item, int(row[1]))] for item, row in zip(items, rows, strict=True)], items
            )

    async def _remove_chunks(self, conn: Any, batch: Batch, rowid: int) -> None:
        """Take an item's chunks, their vectors and postings out, and out of the statistics (the
        batch's postings written first: they may be this item's)."""
        await conn.execute(DELETE_VECTORS_SQL, (self.user_id, self.p, rowid))
        if not self.bm25:
            await conn.execute(DELETE_CHUNKS_SQL, (self.user_id, rowid))
            return
        await self._flush(conn, batch)
        removed = await (await conn.execute(REMOVE_CHUNKS_SQL, (self.user_id, rowid))).fetchall()
        lexemes = index([(r[2], r[3]) for r in removed]).postings
        lost = await blocks.cut(conn, self.user_id, self.p, rowid, sorted(lexemes), [r[0] for r in removed])
        for lexeme, count in lost.items():
            batch.docs[lexeme] = batch.docs.get(lexeme, 0) - count
            batch.gone.add(lexeme)
        batch.chunks -= len(removed)
        batch.tokens -= sum(int(r[1]) for r in removed)
