"""A bulk write's full-text buffer (`records.fts_buffer`): the same index, fewer segments, and no
setting left behind, whether the write commits or fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.bench.corpus import generate
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.db import Database, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.records import fts_buffer
from knowledge_mcp.sources.storage.records.fts_buffer import bulk_fts_buffer


def notes(count: int) -> list[tuple[Path, ParsedItem]]:
    items = [b.item for b in generate(900, 7).items if b.source == "notes"]
    assert len(items) >= count
    return [(Path(f"f/{n}.md"), item) for n, item in enumerate(items[:count])]


async def config(db: Database) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in await db.fetchall("SELECT k, v FROM notes_chunks_fts_config ORDER BY k")]


async def index_terms(db: Database) -> list[tuple[Any, ...]]:
    """Every term instance the index holds (term, row, column, offset): its content, whatever its
    segments' layout."""
    await db.write(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.terms USING fts5vocab(main, notes_chunks_fts, instance)"
    )
    rows = await db.fetchall("SELECT term, doc, col, offset FROM temp.terms ORDER BY term, doc, col, offset")
    await db.fetchall("INSERT INTO notes_chunks_fts(notes_chunks_fts) VALUES ('integrity-check')")
    return [tuple(r) for r in rows]


async def segments(db: Database) -> int:
    row = await db.fetchone("SELECT count(DISTINCT segid) FROM notes_chunks_fts_idx")
    assert row is not None
    return int(row[0])


@pytest.mark.anyio
async def test_a_bulk_write_indexes_the_same_terms_in_fewer_segments_and_leaves_no_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = notes(40)
    results = {}
    for how, bulk_items in (("default_buffer", len(items) + 1), ("bulk_buffer", 10)):
        monkeypatch.setattr(fts_buffer, "BULK_ITEMS", bulk_items)
        db = await open_database(tmp_path / how / "notes.db", SOURCES["notes"].migrations)
        try:
            before = await config(db)
            # A small buffer, as a large corpus meets the default one: a segment every few notes.
            await db.write("INSERT INTO notes_chunks_fts(notes_chunks_fts, rank) VALUES ('hashsize', 2000)")
            await db.write("DELETE FROM notes_chunks_fts_config WHERE k = 'hashsize'")
            assert await Importer(SOURCES["notes"], db).write_items(items) == ["added"] * len(items)
            results[how] = (await index_terms(db), await segments(db), await config(db), before)
        finally:
            await db.close()
    default_terms, default_segments, _, _ = results["default_buffer"]
    bulk_terms, bulk_segments, bulk_config, bulk_before = results["bulk_buffer"]
    assert bulk_terms == default_terms and bulk_terms
    assert bulk_segments < default_segments
    assert bulk_config == bulk_before == [("version", 4)]


@pytest.mark.anyio
async def test_a_table_with_its_own_buffer_size_keeps_it_after_a_bulk_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fts_buffer, "BULK_ITEMS", 2)
    db = await open_database(tmp_path / "notes.db", SOURCES["notes"].migrations)
    try:
        await db.write("INSERT INTO notes_chunks_fts(notes_chunks_fts, rank) VALUES ('hashsize', 2097152)")
        await Importer(SOURCES["notes"], db).write_items(notes(3))
        assert await config(db) == [("hashsize", 2097152), ("version", 4)]
    finally:
        await db.close()


@pytest.mark.anyio
async def test_a_failed_bulk_write_rolls_its_buffer_setting_back_with_its_rows(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "notes.db", SOURCES["notes"].migrations)
    importer = Importer(SOURCES["notes"], db)
    try:
        with pytest.raises(RuntimeError, match="the batch failed"):
            async with db.transaction() as conn, bulk_fts_buffer(conn, "notes", fts_buffer.BULK_ITEMS):
                await importer._write_items_in(conn, notes(2))
                async with conn.execute("SELECT v FROM notes_chunks_fts_config WHERE k = 'hashsize'") as cur:
                    assert tuple(await cur.fetchone() or ()) == (fts_buffer.BUFFER_BYTES,)
                raise RuntimeError("the batch failed")
        assert await config(db) == [("version", 4)]
        assert await db.fetchall("SELECT id FROM notes_items") == []
        # The connection writes on as before, with FTS5's own buffer.
        assert await importer.write_items(notes(2)) == ["added", "added"]
        assert await config(db) == [("version", 4)]
        assert await index_terms(db)
    finally:
        await db.close()
