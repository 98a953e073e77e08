"""An import run: one bad file fails alone, odd file names import, the size cap is reported,
unchanged files are skipped by size and time, and a database that cannot grow ends the run with
what was written kept."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.errors import SourceUnavailableError
from knowledge_mcp.sources.notes.source import NotesSource
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer, ImportSummary
from knowledge_mcp.sources.storage.items import ParsedItem
from tests.conftest import FIXTURES

pytestmark = pytest.mark.anyio


class Touchy(NotesSource):
    """Notes, except that a file holding BOOM fails to parse, one holding SURROGATE carries an
    unstorable title, and one holding UNWRITABLE an item no database write can take."""

    def parse_file(self, path: Path, raw: bytes) -> list[ParsedItem]:
        items = super().parse_file(path, raw)
        if b"BOOM" in raw:
            raise ValueError("the parser gave up")
        if b"SURROGATE" in raw:
            items[0].title = "caf\udce9 notes"
        if b"UNWRITABLE" in raw:
            items[0].tags = [object()]  # type: ignore[list-item]
        return items


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    shutil.copytree(FIXTURES / "notes", folder)
    return folder


async def _run(data_dir: Path, folder: Path, source: NotesSource | None = None, **kw: Any) -> ImportSummary:
    src = source or NotesSource()
    db = await open_database(database_path(data_dir, "local", "notes"), src.migrations)
    try:
        prune = kw.pop("prune", False)
        return await Importer(src, db, **kw).run([folder], prune=prune)
    finally:
        await db.close()


async def _rows(data_dir: Path, sql: str) -> list[Any]:
    db = await open_database(database_path(data_dir, "local", "notes"), NotesSource().migrations)
    try:
        return [tuple(r) for r in await db.fetchall(sql)]
    finally:
        await db.close()


async def _fixture_notes(tmp_path: Path) -> int:
    """How many items the notes fixtures import as they are."""
    return (await _run(tmp_path / "baseline", FIXTURES / "notes")).added


async def test_a_parse_error_a_bad_title_and_a_failed_write_each_stay_with_their_own_file(
    vault: Path, data_dir: Path
) -> None:
    (vault / "boom.md").write_text("# Boom\n\nBOOM goes the parser.\n", encoding="utf-8")
    (vault / "surrogate.md").write_text("# Cafe\n\nSURROGATE in the title.\n", encoding="utf-8")
    (vault / "unwritable.md").write_text("# Tags\n\nUNWRITABLE tags.\n", encoding="utf-8")
    summary = await _run(data_dir, vault, Touchy())
    expected = await _fixture_notes(vault.parent) + 1  # and the surrogate title's note
    failed = {Path(f["path"]).name: f["reason"] for f in summary.failures}
    assert set(failed) == {"boom.md", "unwritable.md"}
    assert "the parser gave up" in failed["boom.md"]
    assert (
        failed["unwritable.md"].startswith("could not be stored (")
        and "TypeError" not in failed["unwritable.md"]
    )
    assert summary.files_failed == 2 and summary.exit_code == 2
    assert summary.added == expected  # the rest, the surrogate title included
    titles = [t for (t,) in await _rows(data_dir, "SELECT title FROM notes_items")]
    assert "caf\ufffd notes" in titles


async def test_file_names_that_are_not_utf8_or_hold_a_newline_import_reimport_unchanged_and_prune(
    tmp_path: Path, data_dir: Path
) -> None:
    folder = tmp_path / "odd"
    folder.mkdir()
    latin1 = os.fsdecode(b"caf\xe9 au lait.md")
    (folder / latin1).write_bytes(b"# Cafe au lait\n\nSteam the milk to 65 degrees.\n")
    (folder / "two\nlines.md").write_text("# Two lines\n\nA name with a newline.\n", encoding="utf-8")
    (folder / "plain.md").write_text("# Plain\n\nNothing odd here.\n", encoding="utf-8")
    first = await _run(data_dir, folder)
    assert (first.added, first.files_failed) == (3, 0)
    again = await _run(data_dir, folder)
    assert (again.added, again.updated, again.unchanged) == (0, 0, 3)
    (folder / latin1).unlink()
    pruned = await _run(data_dir, folder, prune=True)
    assert (pruned.pruned, pruned.unchanged) == (1, 2)
    paths = [p for (p,) in await _rows(data_dir, "SELECT path FROM notes_files ORDER BY path")]
    assert paths == sorted([str(folder / "plain.md"), str(folder / "two\nlines.md")])


async def test_a_file_over_the_size_cap_is_skipped_with_a_notice_naming_the_cap(
    vault: Path, data_dir: Path
) -> None:
    big = vault / "big.md"
    big.write_text("# Big\n\n" + "word " * 400_000, encoding="utf-8")  # about 2 MB
    summary = await _run(data_dir, vault, max_file_bytes=1024 * 1024)
    notice = next(n for n in summary.notices if Path(n["path"]).name == "big.md")
    assert "1 MB" in notice["reason"] and "import_max_file_mb" in notice["reason"]
    assert summary.files_failed == 0
    assert summary.added == await _fixture_notes(vault.parent)
    assert await _rows(data_dir, "SELECT 1 FROM notes_items WHERE title = 'Big'") == []


async def test_a_file_with_the_same_size_and_time_is_not_read_again_and_a_touched_one_is(
    tmp_path: Path, data_dir: Path
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    note = folder / "tea.md"
    note.write_text("# Tea\n\nOolong steeps at 90 degrees.\n", encoding="utf-8")
    old = 1_700_000_000_000_000_000
    os.utime(note, ns=(old, old))
    assert (await _run(data_dir, folder)).added == 1
    note.write_text("# Tea\n\nSencha steeps at 70 degrees.\n", encoding="utf-8")  # same size
    os.utime(note, ns=(old, old))
    same = await _run(data_dir, folder)
    assert (same.unchanged, same.updated) == (1, 0)  # trusted size and time: not read
    os.utime(note, ns=(old + 10**9, old + 10**9))
    touched = await _run(data_dir, folder)
    assert (touched.unchanged, touched.updated) == (0, 1)
    contents = [c for (c,) in await _rows(data_dir, "SELECT content FROM notes_items")]
    assert contents == ["Sencha steeps at 70 degrees."] or "Sencha" in contents[0]


async def test_a_full_database_ends_the_run_with_one_reason_and_keeps_what_was_written(
    tmp_path: Path, data_dir: Path
) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(600):
        (folder / f"{n:04d}.md").write_text(f"# Note {n}\n\n" + f"filler text {n} " * 100, encoding="utf-8")
    src = NotesSource()
    db: Database = await open_database(database_path(data_dir, "local", "notes"), src.migrations)
    try:
        pages = (await db.fetchone("PRAGMA page_count"))[0]  # type: ignore[index]
        await db.conn.execute(f"PRAGMA max_page_count = {pages + 500}")  # about 2 MB more
        with pytest.raises(SourceUnavailableError, match="disk is full"):
            await Importer(src, db).run([folder])
    finally:
        await db.close()
    kept = await _rows(data_dir, "SELECT COUNT(*) FROM notes_items")
    files = await _rows(data_dir, "SELECT COUNT(*) FROM notes_files")
    assert 0 < kept[0][0] < 600 and kept == files  # whole batches: each recorded file has its item
    assert (await _run(data_dir, folder)).added == 600 - kept[0][0]  # a re-run completes it
