"""`knowledge-mcp migrate --to postgresql://…`: a user's SQLite data copied into PostgreSQL.

Each source's items are read from its SQLite database in rowid order, BATCH a transaction, and
written through the PostgreSQL writer (`writing.py`) as the import wrote them: the same chunks
(each item's stored spans, so `chunk_rows` makes the same chunk ids), the same item ids (from
the origin) and the SQLite content hashes, with the bm25 statistics kept as every write keeps
them; then the records of the imported files, so the next import into PostgreSQL skips what is
unchanged. Each item keeps its version (a note edited through the tools is at version n), and
each chunk the vectors it has in SQLite (`vectors.write_batch`: a semantic search after the
copy needs no embedding run). Resumable: a second run finds each copied item unchanged by its
hash and writes only what is missing (vectors: the chunks still without). The user's partitions
are then analyzed (`analyzing.py`: fresh planner statistics for the first searches). Verified by counting
items and chunks on both sides, the chunks with vectors (PostgreSQL has at least SQLite's), and
by ranking a sample of queries (words of the titles of items spread over the source) both ways:
the same top ten.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...search.query import parse_query, words_of
from ..db import Database
from ..importing import HAS_FOLDERS_SQL
from ..items import ChunkSpan, ParsedItem
from . import bm25
from .embeddings import vectors
from .pool import PgDatabase
from .schema import as_user
from .writers.analyzing import analyze_user
from .writers.folders import copy_recorded
from .writing import PgItemWriter

BATCH = 200
SAMPLE_QUERIES = 20
ITEMS_SQL = """SELECT id, item_id, origin, source_path, title, content, content_hash, created_at,
    last_modified, version, tags, meta FROM {p}_items WHERE id > ? ORDER BY id LIMIT ?"""
VERSIONS_SQL = """UPDATE pg_items AS i SET version = v.version
    FROM unnest(%s::text[], %s::int[]) AS v(item_id, version)
    WHERE i.user_id = %s AND i.source = %s AND i.item_id = v.item_id AND i.version <> v.version"""
VECTORS_SQL = """SELECT c.id, i.item_id, c.chunk_index, v.windows, v.vectors FROM {p}_chunk_vectors AS cv
    JOIN {p}_chunks AS c ON c.id = cv.chunk_id JOIN {p}_items AS i ON i.id = c.item_rowid
    JOIN {p}_vectors AS v ON v.text_hash = cv.text_hash
    WHERE c.id > ? ORDER BY c.id LIMIT ?"""
UNEMBEDDED_SQL = """SELECT i.item_id, c.chunk_index, c.id, c.item FROM pg_chunks AS c
    JOIN pg_items AS i ON i.user_id = c.user_id AND i.id = c.item
    WHERE c.user_id = %s AND c.source = %s AND i.item_id = ANY(%s::text[]) AND NOT EXISTS (
        SELECT 1 FROM pg_chunk_vectors AS v WHERE v.user_id = c.user_id AND v.chunk = c.id)"""
EMBEDDED_SQL = "SELECT count(*) FROM {p}_chunk_vectors"
SPANS_SQL = """SELECT item_rowid, start_offset, end_offset, field, meta FROM {p}_chunks
    WHERE item_rowid IN ({marks}) ORDER BY item_rowid, chunk_index"""
FILES_SQL = "SELECT path, file_hash, item_count, imported_at, size, mtime_ns FROM {p}_files"
FOLDERS_SQL = "SELECT path, is_folder, imported_at FROM {p}_folders"
COUNT_SQL = "SELECT (SELECT count(*) FROM {p}_items), (SELECT count(*) FROM {p}_chunks)"
PG_COUNT_SQL = """SELECT (SELECT count(*) FROM pg_items WHERE user_id = %(u)s AND source = %(s)s),
    (SELECT count(*) FROM pg_chunks WHERE user_id = %(u)s AND source = %(s)s)"""
TITLES_SQL = "SELECT title FROM {p}_items ORDER BY id"
IDS_SQL = "SELECT id, item_id FROM {p}_items"
PG_IDS_SQL = "SELECT id, item_id FROM pg_items WHERE user_id = %s AND source = %s"


@dataclass
class CopyReport:
    source: str
    outcomes: dict[str, int] = field(default_factory=dict)
    sqlite: tuple[int, int] = (0, 0)
    """Items and chunks in SQLite."""
    postgres: tuple[int, int] = (0, 0)
    """Items and chunks of the user's source in PostgreSQL after the copy."""
    searches: int = 0
    same_top10: int = 0
    vectors: tuple[int, int] = (0, 0)
    """Chunks with vectors in SQLite, and of the user's source in PostgreSQL after the copy."""

    @property
    def verified(self) -> bool:
        same = self.sqlite == self.postgres and self.same_top10 == self.searches
        return same and self.vectors[1] >= self.vectors[0]

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "verified": self.verified}


async def copy_source(lite: Database, pg: PgDatabase, source: Any, user_id: str) -> CopyReport:
    """Copy `source`'s items of `lite` into `pg` as `user_id`; counts and sample searches checked."""
    p = source.name
    writer = PgItemWriter(pg, source, user_id)
    report = CopyReport(p)
    last = 0
    while rows := await lite.fetchall(ITEMS_SQL.format(p=p), (last, BATCH)):
        spans = await _spans(lite, p, [r["id"] for r in rows])
        items = [(Path(r["source_path"]), _item(r, spans.get(r["id"], []))) for r in rows]
        for outcome in await writer.write_items(items, [r["content_hash"] for r in rows]):
            report.outcomes[outcome] = report.outcomes.get(outcome, 0) + 1
        await _versions(pg, writer.user_id, p, rows)
        last = rows[-1]["id"]
    files = await lite.fetchall(FILES_SQL.format(p=p))
    await writer.record_files([tuple(r) for r in files])  # type: ignore[misc]
    await copy_vectors(lite, pg, p, writer.user_id)
    embedded = await lite.fetchone(EMBEDDED_SQL.format(p=p))
    cover = await vectors.coverage(pg, writer.user_id, p)
    report.vectors = (int(embedded[0]) if embedded else 0, cover.embedded)
    if await lite.fetchone(HAS_FOLDERS_SQL.format(p=p)) is not None:  # where notes go, what --watch watches
        await copy_recorded(pg, writer.user_id, p, await lite.fetchall(FOLDERS_SQL.format(p=p)))
    report.sqlite = tuple(await lite.fetchone(COUNT_SQL.format(p=p)))  # type: ignore[arg-type]
    async with pg.transaction() as conn:
        await as_user(conn, writer.user_id)
        row = await (await conn.execute(PG_COUNT_SQL, {"u": writer.user_id, "s": p})).fetchone()
    report.postgres = (int(row[0]), int(row[1])) if row else (0, 0)
    await analyze_user(pg, writer.user_id)  # a bulk copy: the planner's statistics made fresh
    await _check_searches(lite, pg, source, writer.user_id, report)
    return report


async def _versions(pg: PgDatabase, user_id: str, p: str, rows: list[Any]) -> None:
    """The items' SQLite versions (the writer starts each at 1)."""
    edited = [(r["item_id"], int(r["version"])) for r in rows if int(r["version"]) != 1]
    if edited:
        async with pg.transaction() as conn:
            await as_user(conn, user_id)
            ids, versions = [e[0] for e in edited], [e[1] for e in edited]
            await conn.execute(VERSIONS_SQL, (ids, versions, user_id, p))


async def copy_vectors(lite: Database, pg: PgDatabase, p: str, user_id: str) -> int:
    """Give each copied chunk still without vectors in PostgreSQL its SQLite vectors (matched by
    item id and chunk index), BATCH chunks a transaction; how many chunks were given them."""
    copied, last = 0, 0
    while rows := await lite.fetchall(VECTORS_SQL.format(p=p), (last, BATCH)):
        last = int(rows[-1][0])
        async with pg.transaction() as conn:
            await as_user(conn, user_id)
            cursor = await conn.execute(UNEMBEDDED_SQL, (user_id, p, sorted({r[1] for r in rows})))
            targets = {(str(t[0]), int(t[1])): (int(t[2]), int(t[3])) for t in await cursor.fetchall()}
        chunks = []
        for _, item_id, index, windows, blob in rows:
            if (item_id, int(index)) in targets:
                matrix = np.frombuffer(blob, dtype=np.float32).reshape(int(windows), -1)
                chunks.append((*targets[(item_id, int(index))], matrix))
        await vectors.write_batch(pg, user_id, p, chunks)
        copied += len(chunks)
    return copied


def _item(row: Any, spans: list[ChunkSpan]) -> ParsedItem:
    return ParsedItem(
        key="",
        title=row["title"],
        content=row["content"],
        created_at=row["created_at"],
        last_modified=row["last_modified"],
        tags=json.loads(row["tags"]),
        meta=json.loads(row["meta"]),
        chunks=spans,
        origin=row["origin"],
    )


async def _spans(lite: Database, p: str, ids: list[int]) -> dict[int, list[ChunkSpan]]:
    sql = SPANS_SQL.format(p=p, marks=",".join("?" * len(ids)))
    found: dict[int, list[ChunkSpan]] = {}
    for r in await lite.fetchall(sql, ids):
        span = ChunkSpan(r["start_offset"], r["end_offset"], r["field"], json.loads(r["meta"]))
        found.setdefault(r["item_rowid"], []).append(span)
    return found


async def _check_searches(
    lite: Database, pg: PgDatabase, source: Any, user_id: str, report: CopyReport
) -> None:
    """Rank up to SAMPLE_QUERIES queries (a few words of titles spread over the source) in both
    stores; SQLite ranks from its exact memory copy (a source too large for one is not sampled)."""
    if await source.memory_indexes(lite).ready() is None:
        return
    titles = [r[0] for r in await lite.fetchall(TITLES_SQL.format(p=source.name))]
    step = max(1, len(titles) // SAMPLE_QUERIES)
    queries = [" ".join(words_of(t)[:3]) for t in titles[::step][:SAMPLE_QUERIES]]
    lite_ids = {r[0]: r[1] for r in await lite.fetchall(IDS_SQL.format(p=source.name))}
    async with pg.transaction() as conn:
        await as_user(conn, user_id)
        pg_ids = dict(await (await conn.execute(PG_IDS_SQL, (user_id, source.name))).fetchall())
    for text in (q for q in queries if q):
        expected = await source.rank_in_memory(lite, text, 10)
        got = await bm25.rank(pg, source.name, user_id, parse_query(text), 10, source.weights)
        want = [lite_ids[i] for i in expected.item_rowids.tolist()][:10] if expected else []
        have = [pg_ids[i] for i in got.ranked.item_rowids.tolist()] if got else []
        report.searches += 1
        report.same_top10 += want == have
