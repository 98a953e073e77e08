"""Vectors per chunk in the source's database: each text embedded once, unchanged text never
again, a changed chunk again, and the coverage that says how much is built."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.search.dense.embedder import Embedder, embedder
from knowledge_mcp.sources.search.dense.indexing import Pacing, embed_missing
from knowledge_mcp.sources.search.dense.sqlite import vectors
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from tests.conftest import import_into

pytestmark = pytest.mark.anyio
NOTES = Path(__file__).parent / "notes"


@pytest.fixture
def model() -> Embedder:
    loaded = embedder()
    assert loaded is not None
    return loaded


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    shutil.copytree(NOTES, folder)
    return folder


async def opened(data_dir: Path) -> Database:
    return await open_database(database_path(data_dir, "local", "notes"), notes.migrations)


async def counts(db: Database) -> tuple[int, int, int]:
    """(chunks, chunks with vectors, stored texts)."""
    row = await db.fetchone(
        "SELECT (SELECT count(*) FROM notes_chunks), (SELECT count(*) FROM notes_chunk_vectors), "
        "(SELECT count(*) FROM notes_vectors)"
    )
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


async def test_embedding_gives_every_chunk_vectors_and_a_second_run_embeds_nothing(
    data_dir: Path, folder: Path, model: Embedder
) -> None:
    await import_into(data_dir, "notes", folder)
    db = await opened(data_dir)
    try:
        assert (await vectors.coverage(db, "notes")).percent == 0
        seen: list[tuple[int, int]] = []
        first = await embed_missing(
            SqliteVectorStore(db, SOURCES["notes"]), model, lambda done, total: seen.append((done, total))
        )
        chunks, linked, texts = await counts(db)
        assert first.embedded == texts == linked == chunks == 3
        assert seen[-1] == (3, 3)
        assert (await vectors.coverage(db, "notes")).complete
        again = await embed_missing(SqliteVectorStore(db, SOURCES["notes"]), model)
        assert (again.embedded, again.linked) == (0, 0)
    finally:
        await db.close()


async def test_a_reimport_embeds_only_the_changed_note_and_drops_the_old_vectors(
    data_dir: Path, folder: Path, model: Embedder
) -> None:
    await import_into(data_dir, "notes", folder)
    db = await opened(data_dir)
    try:
        await embed_missing(SqliteVectorStore(db, SOURCES["notes"]), model)
    finally:
        await db.close()
    boiler = folder / "Boiler service.md"
    boiler.write_text(boiler.read_text() + "\nThe radiator in the hall still needs bleeding.\n")
    await import_into(data_dir, "notes", folder)
    db = await opened(data_dir)
    try:
        assert (await vectors.coverage(db, "notes")).percent == 66  # 2 of 3 chunks kept theirs
        report = await embed_missing(SqliteVectorStore(db, SOURCES["notes"]), model)
        assert (report.embedded, report.linked) == (1, 1)
        assert await counts(db) == (3, 3, 3)  # the old text's vectors are gone
    finally:
        await db.close()


async def test_the_same_text_in_two_files_is_embedded_once(
    data_dir: Path, folder: Path, model: Embedder
) -> None:
    shutil.copy(folder / "July reading.md", folder / "July reading (copy).md")
    await import_into(data_dir, "notes", folder)
    db = await opened(data_dir)
    try:
        report = await embed_missing(SqliteVectorStore(db, SOURCES["notes"]), model)
        assert (report.linked, report.embedded) == (4, 3)
        assert await counts(db) == (4, 4, 3)
    finally:
        await db.close()


def test_a_chunk_is_embedded_with_its_title() -> None:
    assert vectors.embedded_text("July reading", "Loved Piranesi.") == "July reading. Loved Piranesi."
    assert vectors.embedded_text("", "Loved Piranesi.") == "Loved Piranesi."
    assert vectors.embedded_text("Note", "Note\n\nbody") == "Note\n\nbody"


async def test_a_paced_run_takes_full_batches_while_idle_and_small_ones_once_a_request_comes(
    data_dir: Path, folder: Path, model: Embedder
) -> None:
    await import_into(data_dir, "notes", folder)
    answers = iter([False, True])  # idle before the first batch, a request before the second

    def busy() -> bool:
        return next(answers, True)

    done: list[int] = []
    db = await opened(data_dir)
    try:
        pacing = Pacing(pause_s=0.01, busy=busy, idle_batch=2)
        report = await embed_missing(
            SqliteVectorStore(db, SOURCES["notes"]), model, lambda n, _: done.append(n), 1, pacing
        )
        assert done == [2, 3]  # two texts at once while idle, then one a batch
        assert report.linked == 3 and await counts(db) == (3, 3, 3)
    finally:
        await db.close()


def test_pacing_pauses_only_while_requests_are_being_served() -> None:
    busy, idle = (
        Pacing(pause_s=0.05, busy=lambda: True, idle_batch=32),
        Pacing(pause_s=0.05, busy=lambda: False, idle_batch=32),
    )
    assert busy.step(8) == (8, 0.05)
    assert idle.step(8) == (32, 0.0)
    assert Pacing(pause_s=0.05).step(8) == (8, 0.05)  # no requests to ask about: always paced
    assert Pacing(busy=lambda: False).step(8) == (8, 0.0)  # no idle size: the run's own
