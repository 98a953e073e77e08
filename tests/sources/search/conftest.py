"""The notes fixtures imported into a throw-away data dir, open as the notes database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from tests.conftest import FIXTURES, import_into


@pytest.fixture
async def notes_db(tmp_path: Path) -> AsyncIterator[Database]:
    await import_into(tmp_path, "notes", FIXTURES / "notes")
    db = await open_database(database_path(tmp_path, "local", "notes"), notes.migrations)
    yield db
    await db.close()
