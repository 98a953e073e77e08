"""Check-then-open races (issue 25): a link flipped every ~3 ms between a note inside the folder
and a file outside it, while imports run; not one of 200 imports stores the outside text."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.sources.notes.source import NotesSource
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from tests.links import CANARY, LinkFlipper, vault_and_outside

pytestmark = pytest.mark.anyio

POLLS = 200
LEAKED_SQL = "SELECT COUNT(*) FROM notes_items WHERE content LIKE '%" + CANARY + "%'"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A vault with one note, and an outside file holding a canary (of another size)."""
    return vault_and_outside(tmp_path)


async def test_an_import_racing_a_link_flipper_never_stores_the_outside_text(
    layout: tuple[Path, Path], data_dir: Path
) -> None:
    vault, outside = layout
    source = NotesSource()
    db = await open_database(database_path(data_dir, "local", "notes"), source.migrations)
    leaks = 0
    try:
        importer = Importer(source, db)
        with LinkFlipper(vault / "flip.md", [vault / "inside.md", outside]) as flipper:
            seen = 0
            for _ in range(POLLS):
                seen = await flipper.next_flip(seen)
                await importer.run([vault])
                leaks += (await db.fetchone(LEAKED_SQL))[0] > 0
        herons = await db.fetchone("SELECT COUNT(*) FROM notes_items WHERE content LIKE '%herons%'")
    finally:
        await db.close()
    assert leaks == 0, f"{leaks} of {POLLS} imports stored the outside file's text"
    assert herons[0] >= 1, "the inside note is imported"
