"""Every source's schema history: one migration per version, and an upgrade that misses none."""

from __future__ import annotations

from itertools import takewhile
from pathlib import Path

import pytest

from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.db import open_database

from .test_db import tables, user_version


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_each_version_has_exactly_one_migration_counting_from_one(name: str) -> None:
    versions = [m.version for m in SOURCES[name].migrations]
    assert versions == list(range(1, len(versions) + 1))


@pytest.mark.parametrize("name", sorted(SOURCES))
@pytest.mark.anyio
async def test_a_database_from_before_the_vectors_gains_them_on_open(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.db"
    migrations = SOURCES[name].migrations
    before = tuple(takewhile(lambda m: "vectors" not in m.name, migrations))  # as released before them
    db = await open_database(path, before)
    assert f"{name}_vectors" not in await tables(db.conn)
    await db.close()
    db = await open_database(path, migrations)
    try:
        assert {f"{name}_vectors", f"{name}_chunk_vectors"} <= await tables(db.conn)
        assert await user_version(db.conn) == len(migrations)
    finally:
        await db.close()
