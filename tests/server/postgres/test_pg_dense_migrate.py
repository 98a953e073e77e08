"""After `migrate --to`, semantic and hybrid searches on PostgreSQL answer as on SQLite with no
embedding run: the vectors came with the copy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.server.cli.migrate import run_migrate
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.registry import SOURCES, get_source
from knowledge_mcp.sources.search.dense.embedder import embedder
from knowledge_mcp.sources.search.dense.indexing import embed_missing
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.storage.db import database_path, open_database

from ...conftest import FIXTURES, call, import_into
from .test_pg_dense import DENSE_NOTES, assert_same

pytestmark = pytest.mark.anyio
QUESTIONS = ["which novels did I enjoy last summer?", "who fixed the heating?", "weeknight dinner ideas"]


async def test_a_semantic_search_after_migrate_equals_the_sqlite_one(
    pg_servers: Any, data_dir: Path, pg_url: str
) -> None:
    await import_into(data_dir, "notes", DENSE_NOTES, FIXTURES / "notes" / "recipes")
    model = embedder()
    assert model is not None
    db = await open_database(database_path(data_dir, "local", "notes"), get_source("notes").migrations)
    try:
        await embed_missing(SqliteVectorStore(db, SOURCES["notes"]), model)
    finally:
        await db.close()
    (report,) = await run_migrate(Settings(data_dir=data_dir), pg_url, ["notes"])  # what `migrate --to` runs
    assert report["verified"] and report["vectors"][1] == report["postgres"][1]
    off, answered = {"embed_in_background": False}, 0
    async with pg_servers("sqlite", **off) as lite, pg_servers("postgresql", **off) as pg:
        for query in QUESTIONS:
            for mode in ("semantic", "hybrid"):
                args = {"query": query, "mode": mode, "limit": 5}
                page = await call(pg, "notes_search", **args)
                assert_same(await call(lite, "notes_search", **args), page, f"{mode}: {query}")
                assert "degraded" not in page
                answered += bool(page["results"])
    assert answered >= 4  # most find something
