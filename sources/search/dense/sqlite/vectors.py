"""The chunks' vectors in a SQLite source database (`storage/schema.dense_vectors_v4`): what is
missing, what is there, and writing a batch. SQL only: `sqlite_store.py` is the `VectorStore`
over it, and embedding is `indexing.py`.

A chunk's embedded text is its title and body; it is keyed by the hash of the model id and
that text, so the same text (a re-import, a copy) is embedded once.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ....storage.db import Database
from ....storage.vector_store import Coverage, Vectors
from ...lexical.sql import ident

MISSING_SQL = """SELECT c.id, c.title, c.body, c.item_rowid FROM {p}_chunks AS c
WHERE c.id > ? AND NOT EXISTS (SELECT 1 FROM {p}_chunk_vectors AS v WHERE v.chunk_id = c.id)
ORDER BY c.id LIMIT ?"""
KNOWN_SQL = "SELECT text_hash FROM {p}_vectors WHERE text_hash IN ({marks})"
INSERT_VECTORS_SQL = "INSERT OR IGNORE INTO {p}_vectors (text_hash, windows, vectors) VALUES (?, ?, ?)"
INSERT_CHUNK_SQL = "INSERT OR REPLACE INTO {p}_chunk_vectors (chunk_id, text_hash) VALUES (?, ?)"
COVERAGE_SQL = "SELECT (SELECT count(*) FROM {p}_chunks), (SELECT count(*) FROM {p}_chunk_vectors)"
STAMP_SQL = "SELECT count(*), max(chunk_id), total(chunk_id) FROM {p}_chunk_vectors"
LOAD_SQL = """SELECT cv.chunk_id, c.item_rowid, v.windows, v.vectors
FROM {p}_chunk_vectors AS cv JOIN {p}_vectors AS v ON v.text_hash = cv.text_hash
JOIN {p}_chunks AS c ON c.id = cv.chunk_id"""
LAYOUT_SQL = """SELECT cv.chunk_id, c.item_rowid, cv.text_hash, v.windows
FROM {p}_chunk_vectors AS cv JOIN {p}_vectors AS v ON v.text_hash = cv.text_hash
JOIN {p}_chunks AS c ON c.id = cv.chunk_id"""
VECTORS_OF_SQL = "SELECT text_hash, windows, vectors FROM {p}_vectors WHERE text_hash IN ({marks})"
WINDOWS_SQL = (
    "SELECT total(v.windows) FROM {p}_chunk_vectors AS cv JOIN {p}_vectors AS v ON v.text_hash = cv.text_hash"
)
DIMENSIONS_SQL = "SELECT length(vectors) / 4 / windows FROM {p}_vectors WHERE windows > 0 LIMIT 1"
UNUSED_SQL = """DELETE FROM {p}_vectors
WHERE NOT EXISTS (SELECT 1 FROM {p}_chunk_vectors AS cv WHERE cv.text_hash = {p}_vectors.text_hash)"""


def sql(template: str, table: str, **more: str) -> str:
    return template.format(p=ident(table), **more)


def embedded_text(title: str, body: str) -> str:
    """What a chunk's vectors are made of: its title (the item's) and its text."""
    title, body = title.strip(), body.strip()
    return f"{title}. {body}" if title and not body.startswith(title) else body or title


def text_hash(model_id: str, text: str) -> str:
    return hashlib.sha256(f"{model_id}\x00{text}".encode()).hexdigest()[:32]


async def coverage(db: Database, table: str) -> Coverage:
    row = await db.fetchone(sql(COVERAGE_SQL, table))
    assert row is not None
    return Coverage(int(row[0]), int(row[1]))


async def stamp(db: Database, table: str) -> tuple[Any, ...]:
    """Changes whenever a chunk gains or loses its vectors."""
    row = await db.fetchone(sql(STAMP_SQL, table))
    return tuple(row) if row is not None else ()


async def windows(db: Database, table: str) -> int:
    """How many windows the chunks' vectors have (a chunk's text may have several)."""
    row = await db.fetchone(sql(WINDOWS_SQL, table))
    return int(row[0]) if row is not None else 0


async def missing(db: Database, table: str, after: int, limit: int) -> list[Any]:
    """Up to `limit` chunks past rowid `after` without vectors: (id, title, body, item rowid)."""
    return await db.fetchall(sql(MISSING_SQL, table), (after, limit))


async def known(db: Database, table: str, hashes: list[str]) -> set[str]:
    """Which of these text hashes already have vectors."""
    if not hashes:
        return set()
    marks = ", ".join("?" * len(hashes))
    return {row[0] for row in await db.fetchall(sql(KNOWN_SQL, table, marks=marks), hashes)}


async def write_batch(
    db: Database, table: str, new: dict[str, Vectors], chunks: list[tuple[int, str]]
) -> None:
    """Store new texts' vectors and which text each chunk has, in one transaction."""
    async with db.transaction() as conn:
        await conn.executemany(
            sql(INSERT_VECTORS_SQL, table),
            [(h, len(v), v.astype(np.float32).tobytes()) for h, v in new.items()],
        )
        await conn.executemany(sql(INSERT_CHUNK_SQL, table), chunks)


async def drop_unused(db: Database, table: str) -> None:
    await db.write(sql(UNUSED_SQL, table))
