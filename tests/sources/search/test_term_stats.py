"""Term statistics: counted once per database, recounted when the index changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.search.lexical.memory import memory_indexes
from knowledge_mcp.sources.search.lexical.term_stats import PROBE, TermStats
from knowledge_mcp.sources.storage.db import Database, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.items import ParsedItem

pytestmark = pytest.mark.anyio


def item(key: str, text: str) -> ParsedItem:
    return ParsedItem(key, f"Note {key}", text, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")


async def test_counts_rows_per_term_and_sees_new_rows(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "notes.db", notes.migrations)
    try:
        importer = Importer(notes, db)
        await importer.write_item(Path("a.md"), item("a", "Sourdough starter needs rye flour."))
        await importer.write_item(Path("b.md"), item("b", "Rye bread keeps for a week."))
        stats = TermStats("notes")
        first = await stats.lookup(db, ['"rye"', '"sourdough"', '"bread"', '"pumpernickel"'])
        assert first.chunks == 2 and first.items == 2
        assert first.df == {'"rye"': 2, '"sourdough"': 1, '"bread"': 1, '"pumpernickel"': 0}

        await importer.write_item(Path("c.md"), item("c", "Pumpernickel is a dark rye bread."))
        second = await stats.lookup(db, ['"rye"', '"pumpernickel"'])
        assert second.chunks == 3
        assert second.df == {'"rye"': 3, '"pumpernickel"': 1}
    finally:
        await db.close()


async def test_sees_rows_another_connection_wrote(tmp_path: Path) -> None:
    reader = await open_database(tmp_path / "notes.db", notes.migrations)
    writer = await open_database(tmp_path / "notes.db", notes.migrations)
    try:
        stats = TermStats("notes")
        assert (await stats.lookup(reader, ['"kimchi"'])).df == {'"kimchi"': 0}
        await Importer(notes, writer).write_item(Path("k.md"), item("k", "Kimchi ferments in a week."))
        assert (await stats.lookup(reader, ['"kimchi"'])).df == {'"kimchi"': 1}
    finally:
        await writer.close()
        await reader.close()


async def kettles(db: Database, window: str) -> None:
    """3 × PROBE notes, a third each about a kettle, a teapot, a saucer (by the `window`), and one
    about a samovar."""
    words = ["kettle", "teapot", "saucer"]
    batch = [
        (Path(f"n{i}.md"), item(f"n{i}", f"Entry {i}: the {words[i % 3]} stands by the {window}."))
        for i in range(3 * PROBE)
    ]
    await Importer(notes, db).write_items(batch)
    await Importer(notes, db).write_item(Path("rare.md"), item("rare", "One samovar only."))


async def test_common_terms_are_estimated_from_their_newest_rows(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "notes.db", notes.migrations)
    try:
        await kettles(db, "window")
        stats = await TermStats("notes").lookup(db, ['"kettle"', '"samovar"', '"window"'])
        assert stats.chunks == 3 * PROBE + 1
        assert stats.df['"samovar"'] == 1  # few rows: counted exactly
        assert abs(stats.df['"kettle"'] - PROBE) <= PROBE * 0.05  # every third row, estimated
        assert abs(stats.df['"window"'] - 3 * PROBE) <= PROBE * 0.05
    finally:
        await db.close()


async def test_counts_read_on_the_loops_thread_see_this_connections_and_anothers_new_rows(
    tmp_path: Path,
) -> None:
    db = await open_database(tmp_path / "notes.db", notes.migrations)
    other = await open_database(tmp_path / "notes.db", notes.migrations)
    try:
        importer = Importer(notes, db)
        await importer.write_item(Path("a.md"), item("a", "Sourdough starter needs rye flour."))
        assert notes.memory_indexes(db).can_read_here()  # the counts are read through its reader
        stats = TermStats("notes")
        assert (await stats.lookup(db, ['"rye"', '"kimchi"'])).df == {'"rye"': 1, '"kimchi"': 0}
        await importer.write_item(Path("b.md"), item("b", "Rye bread keeps for a week."))
        assert (await stats.lookup(db, ['"rye"'])).df == {'"rye"': 2}
        await Importer(notes, other).write_item(Path("k.md"), item("k", "Kimchi ferments in a week."))
        again = await stats.lookup(db, ['"rye"', '"kimchi"'])
        assert again.chunks == 3 and again.df == {'"rye"': 2, '"kimchi"': 1}
    finally:
        await other.close()
        await db.close()


async def test_a_memory_copy_counts_words_as_the_fts5_probes_do(tmp_path: Path) -> None:
    """knowledge_search counts a small source's words from its memory copy (no FTS5 probe):
    the same numbers, exact or estimated, as the probes give."""
    db = await open_database(tmp_path / "notes.db", notes.migrations)
    try:
        await kettles(db, "windows")
        index = await memory_indexes(db, notes).ready()
        assert index is not None
        terms = {'"kettle"': "kettl", '"samovar"': "samovar", '"windows"': "window", '"yurt"': "yurt"}
        probed = await TermStats("notes").lookup(db, list(terms))
        copied = await TermStats("notes").counted_in(db, index, terms)
        assert copied == probed
        assert copied.df['"windows"'] > PROBE and copied.df['"samovar"'] == 1 and copied.df['"yurt"'] == 0
    finally:
        await db.close()
