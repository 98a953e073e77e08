"""A parser that reads most of a file reports the parts it could not read, one line each, and
the rest of the file imports (`ParsedFile`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.sources.notes.source import NotesSource
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.items import ParsedFile, ParsedItem, PartProblem

pytestmark = pytest.mark.anyio
STAMP = "2026-11-01T09:00:00+00:00"


class HalfReadable(NotesSource):
    """Notes whose every file holds one good part, one broken part and one left out."""

    def parse_file(self, path: Path, raw: bytes) -> list[ParsedItem]:
        good = ParsedItem("good", "Readable part", raw.decode(), STAMP, STAMP)
        return ParsedFile(
            [good],
            failures=[PartProblem("message 2", "header is not valid UTF-8")],
            notices=[PartProblem("chapter 9", "over the size cap; left out")],
        )


class Unreadable(NotesSource):
    def parse_file(self, path: Path, raw: bytes) -> list[ParsedItem]:
        return ParsedFile(failures=[PartProblem("message 1", "no From line")])


async def _import(tmp_path: Path, source: NotesSource) -> dict[str, object]:
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    (folder / "a.md").write_text("the readable sourdough part\n")
    db = await open_database(database_path(tmp_path, "local", "notes"), source.migrations)
    try:
        summary = await Importer(source, db).run([folder])
        titles = [r[0] for r in await db.fetchall("SELECT title FROM notes_items")]
    finally:
        await db.close()
    return {**summary.as_dict(), "exit": summary.exit_code, "titles": titles}


async def test_the_good_parts_import_and_each_bad_part_is_a_failure_line(tmp_path: Path) -> None:
    result = await _import(tmp_path, HalfReadable())
    assert result["titles"] == ["Readable part"] and result["added"] == 1
    assert result["files_failed"] == 1 and result["exit"] == 2
    assert result["failures"] == [
        {"path": f"{tmp_path / 'in' / 'a.md'} (message 2)", "reason": "header is not valid UTF-8"}
    ]
    assert {
        "path": f"{tmp_path / 'in' / 'a.md'} (chapter 9)",
        "reason": "over the size cap; left out",
    } in result["notices"]


async def test_a_file_whose_every_part_failed_is_a_failure_not_an_empty_file(tmp_path: Path) -> None:
    result = await _import(tmp_path, Unreadable())
    assert result["titles"] == [] and result["skipped"] == 0
    assert result["files_failed"] == 1 and result["exit"] == 2
    assert [f["path"].rsplit(" ", 2)[-2:] for f in result["failures"]] == [["(message", "1)"]]
