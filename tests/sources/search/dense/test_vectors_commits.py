"""Vectors committed while the server searches (the background worker's batches) leave the
lexical memory copy in use; a change to the chunks still retires it; the dense index notices."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.search.dense.sqlite import vectors
from knowledge_mcp.sources.search.dense.sqlite.index import dense_indexes
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from tests.conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio


@pytest.fixture
async def notes_db(tmp_path: Path) -> AsyncIterator[Database]:
    await import_into(tmp_path, "notes", FIXTURES / "notes")
    db = await open_database(database_path(tmp_path, "local", "notes"), notes.migrations)
    yield db
    await db.close()


async def commit_a_batch_of_vectors(path: Path, count: int) -> None:
    """As the background worker does: on its own connection, one transaction."""
    worker = await open_database(path, notes.migrations)
    try:
        rows = await vectors.missing(worker, "notes", 0, count)
        chunks = [(int(r[0]), f"{int(r[0]):032x}") for r in rows]
        new = {h: np.ones((1, 384), np.float32) / np.sqrt(384) for _, h in chunks}
        await vectors.write_batch(worker, "notes", new, chunks)
    finally:
        await worker.close()


async def test_a_batch_of_vectors_leaves_the_memory_copy_current(notes_db: Database) -> None:
    indexes = notes.memory_indexes(notes_db)
    copy = await indexes.ready()
    assert copy is not None
    before = (await dense_indexes(notes_db, notes).current(), dense_indexes(notes_db, notes).coverage)
    await commit_a_batch_of_vectors(notes_db.path, 3)
    assert indexes.current() is copy
    await dense_indexes(notes_db, notes).current()
    assert dense_indexes(notes_db, notes).coverage.embedded == before[1].embedded + 3


async def test_a_changed_chunk_still_retires_the_memory_copy(notes_db: Database) -> None:
    indexes = notes.memory_indexes(notes_db)
    assert await indexes.ready() is not None
    await commit_a_batch_of_vectors(notes_db.path, 3)
    await notes_db.write(
        "UPDATE notes_chunks SET body = body || ' quokka' WHERE id = (SELECT min(id) FROM notes_chunks)"
    )
    assert indexes.current() is None
    rebuilt = await indexes.ready()
    assert rebuilt is not None and "quokka" in rebuilt.terms
