"""`knowledge-mcp migrate --to postgresql://…`: a user's SQLite data copied into PostgreSQL.

Each source's items are read from its SQLite database in rowid order, BATCH a transaction, and
written through the PostgreSQL writer (`writing.py`) as the import wrote them: the same chunks
(each item's stored spans, so `chunk_rows` makes the same chunk ids), the same item ids (from
the origin) and the SQLite content hashes, with the bm25 statistics kept as every write keeps
them; then the records of the imported files, so the next import into PostgreSQL skips what is
unchanged. Resumable: a second run finds each copied item unchanged by its hash and writes only
what is missing. Verified by counting items and chunks on both sides and by ranking a sample
of queries (words of the titles of items spread over the source) both ways: the same top ten.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...search.query import parse_query, words_of
from ..db import Database
from ..importing import HAS_FOLDERS_SQL
from ..items import ChunkSpan, ParsedItem
from . import bm25
from .pool import PgDatabase
from .schema import as_user
from .writers.folders import copy_recorded
from .writing import PgItemWriter

BATCH = 200
SAMPLE_QUERIES = 20
ITEMS_SQL = """SELECT id, origin, source_path, title, content, content_hash, created_at, last_modified,
    tags, meta FROM {p}_items WHERE id > ? ORDER BY id LIMIT ?"""
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

    @property
    def verified(self) -> bool:
        return self.sqlite == self.postgres and self.same_top10 == self.searches

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
        last = rows[-1]["id"]
    files = await lite.fetchall(FILES_SQL.format(p=p))
    await writer.record_files([tuple(r) for r in files])  # type: ignore[misc]
    if await lite.fetchone(HAS_FOLDERS_SQL.format(p=p)) is not None:  # where notes go, what --watch watches
        await copy_recorded(pg, writer.user_id, p, await lite.fetchall(FOLDERS_SQL.format(p=p)))
    report.sqlite = tuple(await lite.fetchone(COUNT_SQL.format(p=p)))  # type: ignore[arg-type]
    async with pg.transaction() as conn:
        await as_user(conn, writer.user_id)
        row = await (await conn.execute(PG_COUNT_SQL, {"u": writer.user_id, "s": p})).fetchone()
    report.postgres = (int(row[0]), int(row[1])) if row else (0, 0)
    await _check_searches(lite, pg, source, writer.user_id, report)
    return report


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
