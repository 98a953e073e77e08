"""migrate --to copies each chunk's vectors and each item's version: the same floats in
PostgreSQL as in SQLite, and a second run copies nothing again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from knowledge_mcp.sources.registry import SOURCES, get_source
from knowledge_mcp.sources.search.dense.embedder import embedder
from knowledge_mcp.sources.search.dense.indexing import embed_missing
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.postgres.copying import copy_source, copy_vectors
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.schema import as_user

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).parents[4]
DENSE_NOTES = ROOT / "tests" / "sources" / "search" / "dense" / "notes"
RECIPES = ROOT / "fixtures" / "notes" / "recipes"
PG_VECTORS_SQL = """SELECT i.item_id, c.chunk_index, v.window_index, v.embedding::text
    FROM pg_chunk_vectors AS v JOIN pg_chunks AS c ON c.user_id = v.user_id AND c.id = v.chunk
    JOIN pg_items AS i ON i.user_id = c.user_id AND i.id = c.item WHERE v.user_id = 'local'"""
LITE_VECTORS_SQL = """SELECT i.item_id, c.chunk_index, v.windows, v.vectors FROM notes_chunk_vectors AS cv
    JOIN notes_chunks AS c ON c.id = cv.chunk_id JOIN notes_items AS i ON i.id = c.item_rowid
    JOIN notes_vectors AS v ON v.text_hash = cv.text_hash"""


async def pg_vectors(store: PgDatabase) -> dict[tuple[str, int, int], np.ndarray]:
    """The user's vectors by (item, chunk, window), from pgvector's text `[..]` or `real[]`'s `{..}`."""
    async with store.transaction() as conn:
        await as_user(conn, "local")
        rows = await (await conn.execute(PG_VECTORS_SQL)).fetchall()
    return {(r[0], r[1], r[2]): np.array(r[3].strip("[]{}").split(","), dtype=np.float32) for r in rows}


async def test_migrate_copies_every_chunks_vectors_and_every_items_version(
    store: PgDatabase, tmp_path: Path
) -> None:
    source = get_source("notes")
    model = embedder()
    assert model is not None
    lite = await open_database(database_path(tmp_path, "local", "notes"), source.migrations)
    try:
        await Importer(source, lite).run([DENSE_NOTES, RECIPES])
        await embed_missing(SqliteVectorStore(lite, SOURCES["notes"]), model)
        await lite.write("UPDATE notes_items SET version = 3 WHERE title = 'July reading'")
        report = await copy_source(lite, store, source, "local")
        expected = {
            (r[0], r[1], n): window
            for r in await lite.fetchall(LITE_VECTORS_SQL)
            for n, window in enumerate(np.frombuffer(r[3], dtype=np.float32).reshape(r[2], -1))
        }
        again = await copy_vectors(lite, store, "notes", "local")
    finally:
        await lite.close()
    assert report.verified and report.vectors[0] == report.vectors[1] == report.sqlite[1]
    copied = await pg_vectors(store)
    assert copied.keys() == expected.keys()
    for key, window in expected.items():
        np.testing.assert_array_equal(copied[key], window)  # the same float32s, not re-embedded
    assert again == 0  # resumable: a second run finds every chunk with its vectors
    versions = await store.fetchall("SELECT title, version FROM pg_items ORDER BY title")
    assert {r["title"]: r["version"] for r in versions}["July reading"] == 3
    assert {r["version"] for r in versions if r["title"] != "July reading"} == {1}
