"""Items written to the PostgreSQL store with their bm25 postings and statistics (`schema.py`).

The import path is the SQLite one up to the write: a source's `parse_file` gives `ParsedItem`s,
`importing.chunk_rows` cuts them into chunks and `importing.item_values` gives the stored
columns; this module is the sink. Each item is written in one transaction with its chunks,
their postings (FTS5's tokens: `tokens.py`), the terms' document counts and the source's
chunk and token counts, so a search never sees an item without its statistics. Replacing an
item first takes its old postings out of the counts; an unchanged item (same content hash) is
skipped. The statistics row is locked first: one writer at a time per user and source, as
SQLite, and no two writers can deadlock on the term counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..db import validate_user_id
from ..importing import chunk_rows, item_id_for, item_values
from ..items import ParsedItem
from .pool import PgDatabase
from .schema import as_user, ensure_user
from .tokens import tokenize

STATS_ROW_SQL = """INSERT INTO pg_corpus_stats (user_id, source) VALUES (%s, %s)
    ON CONFLICT (user_id, source) DO NOTHING"""
LOCK_STATS_SQL = "SELECT chunks FROM pg_corpus_stats WHERE user_id = %s AND source = %s FOR UPDATE"
SELECT_ITEM_SQL = """SELECT id, item_id, content_hash FROM pg_items
    WHERE user_id = %s AND source = %s AND origin = %s"""
INSERT_ITEM_SQL = """INSERT INTO pg_items (user_id, source, item_id, origin, source_path, title, content,
    content_hash, created_at, last_modified, tags, meta, imported_at)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s) RETURNING id"""
UPDATE_ITEM_SQL = """UPDATE pg_items SET title = %s, content = %s, content_hash = %s, created_at = %s,
    last_modified = %s, tags = %s::jsonb, meta = %s::jsonb, imported_at = %s, version = version + 1
    WHERE user_id = %s AND id = %s"""
DELETE_ITEM_SQL = "DELETE FROM pg_items WHERE user_id = %s AND id = %s"
INSERT_CHUNKS_SQL = """INSERT INTO pg_chunks (user_id, source, item, chunk_index, chunk_uuid, field,
    start_offset, end_offset, title, body, meta, tokens)
    SELECT %s, %s, %s, u.* FROM unnest(%s::int[], %s::text[], %s::text[], %s::int[], %s::int[],
        %s::text[], %s::text[], %s::jsonb[], %s::int[]) AS u
    RETURNING id, chunk_index"""
INSERT_POSTINGS_SQL = """INSERT INTO pg_postings (user_id, source, lexeme, chunk, item, tf_title, tf_body, dl)
    SELECT %s, %s, u.* FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::int[], %s::int[],
        %s::int[]) AS u"""
ADD_DOCS_SQL = """INSERT INTO pg_term_docs (user_id, source, lexeme, docs)
    SELECT %s, %s, u.lexeme, u.docs FROM unnest(%s::text[], %s::bigint[]) AS u(lexeme, docs)
    ORDER BY u.lexeme
    ON CONFLICT (user_id, source, lexeme) DO UPDATE SET docs = pg_term_docs.docs + excluded.docs"""
ADD_STATS_SQL = """UPDATE pg_corpus_stats SET chunks = chunks + %s, tokens = tokens + %s
    WHERE user_id = %s AND source = %s"""
REMOVE_POSTINGS_SQL = """WITH gone AS (
        DELETE FROM pg_postings WHERE user_id = %(user)s AND item = %(item)s RETURNING lexeme
    ), counts AS (SELECT lexeme, count(*) AS n FROM gone GROUP BY lexeme)
    UPDATE pg_term_docs d SET docs = d.docs - counts.n FROM counts
    WHERE d.user_id = %(user)s AND d.source = %(source)s AND d.lexeme = counts.lexeme
    RETURNING d.lexeme, d.docs"""
FORGET_TERMS_SQL = """DELETE FROM pg_term_docs
    WHERE user_id = %s AND source = %s AND lexeme = ANY(%s::text[]) AND docs <= 0"""
REMOVE_CHUNKS_SQL = """WITH gone AS (
        DELETE FROM pg_chunks WHERE user_id = %(user)s AND item = %(item)s RETURNING tokens
    )
    UPDATE pg_corpus_stats SET chunks = chunks - (SELECT count(*) FROM gone),
        tokens = tokens - (SELECT coalesce(sum(tokens), 0) FROM gone)
    WHERE user_id = %(user)s AND source = %(source)s"""
DELETE_CHUNKS_SQL = "DELETE FROM pg_chunks WHERE user_id = %s AND item = %s"
ITEMS_OF_PATHS_SQL = """SELECT id, origin FROM pg_items
    WHERE user_id = %s AND source = %s AND source_path = ANY(%s::text[])"""


class PgItemWriter:
    """Writes one user's items of one source to the PostgreSQL store. With `bm25=False` only
    items and chunks are written (no postings or statistics: to measure their cost)."""

    def __init__(self, db: PgDatabase, source: str, user_id: str, *, bm25: bool = True) -> None:
        self.db = db
        self.source = source
        self.user_id = validate_user_id(user_id)
        self.bm25 = bm25

    async def write_item(self, path: Path, item: ParsedItem) -> str:
        """Insert or update one item in its own transaction: added, updated or unchanged."""
        return (await self.write_items([(path, item)]))[0]

    async def write_items(self, items: Sequence[tuple[Path, ParsedItem]]) -> list[str]:
        """Several items in ONE transaction (all or nothing), in order; each one's outcome."""
        await ensure_user(self.db, self.user_id)
        async with self.db.transaction() as conn:
            await self._begin(conn)
            return [await self._write(conn, path, item) for path, item in items]

    async def delete_paths(self, paths: Sequence[str], keep: set[str] | None = None) -> int:
        """Delete the items imported from `paths` (whose origin is not in `keep`), with their
        chunks, postings and their share of the statistics; how many."""
        await ensure_user(self.db, self.user_id)
        async with self.db.transaction() as conn:
            await self._begin(conn)
            found = await conn.execute(ITEMS_OF_PATHS_SQL, (self.user_id, self.source, list(paths)))
            rows = [r for r in await found.fetchall() if keep is None or r[1] not in keep]
            for rowid, _ in rows:
                await self._remove_chunks(conn, rowid)
                await conn.execute(DELETE_ITEM_SQL, (self.user_id, rowid))
        return len(rows)

    async def _begin(self, conn: Any) -> None:
        await as_user(conn, self.user_id)
        await conn.execute(STATS_ROW_SQL, (self.user_id, self.source))
        await conn.execute(LOCK_STATS_SQL, (self.user_id, self.source))

    async def _write(self, conn: Any, path: Path, item: ParsedItem) -> str:
        origin = item.origin_in(path)
        content_hash = item.content_hash()
        found = await conn.execute(SELECT_ITEM_SQL, (self.user_id, self.source, origin))
        existing = await found.fetchone()
        if existing is not None and existing[2] == content_hash:
            return "unchanged"
        values = item_values(item, content_hash)
        if existing is not None:
            rowid, item_id = existing[0], existing[1]
            await self._remove_chunks(conn, rowid)
            await conn.execute(UPDATE_ITEM_SQL, (*values, self.user_id, rowid))
        else:
            item_id = item_id_for(origin)
            params = (self.user_id, self.source, item_id, origin, str(path), *values)
            rowid = (await (await conn.execute(INSERT_ITEM_SQL, params)).fetchone())[0]
        await self._insert_chunks(conn, rowid, chunk_rows(rowid, item_id, item))
        return "updated" if existing is not None else "added"

    async def _insert_chunks(self, conn: Any, rowid: int, rows: list[tuple[Any, ...]]) -> None:
        tokens = tokenize([(row[6], row[7]) for row in rows])
        columns = [list(c) for c in zip(*(row[1:] for row in rows), strict=True)]
        lengths = [t.length for t in tokens]
        cursor = await conn.execute(INSERT_CHUNKS_SQL, (self.user_id, self.source, rowid, *columns, lengths))
        ids = {index: chunk for chunk, index in await cursor.fetchall()}
        if not self.bm25:
            return
        postings: list[tuple[str, int, int, int, int, int]] = []
        docs: dict[str, int] = {}
        for index, chunk_tokens in enumerate(tokens):
            for lexeme, (tf_title, tf_body) in chunk_tokens.postings().items():
                postings.append((lexeme, ids[index], rowid, tf_title, tf_body, chunk_tokens.length))
                docs[lexeme] = docs.get(lexeme, 0) + 1
        arrays = [list(c) for c in zip(*postings, strict=True)] if postings else [[]] * 6
        await conn.execute(INSERT_POSTINGS_SQL, (self.user_id, self.source, *arrays))
        await conn.execute(ADD_DOCS_SQL, (self.user_id, self.source, list(docs), list(docs.values())))
        await conn.execute(ADD_STATS_SQL, (len(rows), sum(lengths), self.user_id, self.source))

    async def _remove_chunks(self, conn: Any, rowid: int) -> None:
        """Take an item's chunks and postings out, and out of the statistics."""
        keys = {"user": self.user_id, "item": rowid, "source": self.source}
        if self.bm25:
            counts = await (await conn.execute(REMOVE_POSTINGS_SQL, keys)).fetchall()
            emptied = [lexeme for lexeme, docs in counts if docs <= 0]
            if emptied:
                await conn.execute(FORGET_TERMS_SQL, (self.user_id, self.source, emptied))
            await conn.execute(REMOVE_CHUNKS_SQL, keys)
        else:
            await conn.execute(DELETE_CHUNKS_SQL, (self.user_id, rowid))
