"""An ordinary role (not a superuser) runs the item store's migrations on a fresh database:
pgvector, which only a superuser may create, is created by an admin or left out with a warning."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from loguru import logger

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.postgres.embeddings import vectors
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import open_pg
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter
from tests.pgvector_probe import allow_pgvector
from tests.server.shared.test_row_security import app_url  # noqa: F401  (the fixture)

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).parents[4] / "fixtures"


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    seen: list[str] = []
    sink = logger.add(lambda m: seen.append(str(m)), level="WARNING", format="{message}")
    try:
        yield seen
    finally:
        logger.remove(sink)


async def _migrate_and_import(url: str) -> tuple[bool, int]:
    db = await open_pg(url)
    try:
        await migrate(db, COMPONENT, MIGRATIONS)
        summary = await PgItemWriter(db, get_source("notes"), "alice").run([FIXTURES / "notes"])
        return await vectors.has_pgvector(db), summary.added
    finally:
        await db.close()


async def test_without_pgvector_made_the_ordinary_role_migrates_with_exact_vectors_and_one_warning(
    app_url: str,  # noqa: F811
    pg_url: str,
    warnings: list[str],
) -> None:
    pgvector, added = await _migrate_and_import(app_url)
    assert (pgvector, added > 0) == (False, True)
    told = [w for w in warnings if "CREATE EXTENSION vector;" in w]
    assert len(told) == 1 and "ranked exactly" in told[0]
    with psycopg.connect(pg_url) as admin:  # the refusal left no half-made extension
        assert admin.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone() == (0,)


async def test_with_pgvector_made_by_an_admin_the_ordinary_role_uses_it_without_a_warning(
    app_url: str,  # noqa: F811
    pg_url: str,
    warnings: list[str],
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as admin:
        allow_pgvector(admin)  # where the run leaves it out: this test runs none of its distances
        admin.execute("CREATE EXTENSION vector")
    pgvector, added = await _migrate_and_import(app_url)
    assert (pgvector, added > 0) == (True, True)
    assert not [w for w in warnings if "CREATE EXTENSION" in w]
