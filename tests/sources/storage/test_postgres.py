"""The PostgreSQL pool and migrations, against the real test server (tests/postgres.py)."""

from __future__ import annotations

import asyncio

import pytest

from knowledge_mcp.server.config import ConfigError, load_settings
from knowledge_mcp.sources.errors import InvalidArgumentError, SchemaVersionError, SourceUnavailableError
from knowledge_mcp.sources.storage.postgres.migrations import PgMigration, migrate
from knowledge_mcp.sources.storage.postgres.pool import check_url, open_pg, redacted

pytestmark = pytest.mark.anyio

NOTES = (
    PgMigration(1, "notes", "CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL)"),
    PgMigration(2, "tags", "ALTER TABLE notes ADD COLUMN tags text; CREATE INDEX notes_tags ON notes (tags)"),
)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://alice:s3cret@db:5432/k", "postgresql://alice:***@db:5432/k"),
        ("postgresql://alice@db/k", "postgresql://alice@db/k"),
        ("postgresql://db/k?sslmode=require", "postgresql://db/k?sslmode=require"),
    ],
)
def test_a_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert redacted(url) == shown


@pytest.mark.parametrize("url", ["mysql://db/k", "sqlite:///x.db", "db:5432"])
def test_a_url_that_is_not_postgresql_is_refused_naming_the_setting(url: str) -> None:
    with pytest.raises(InvalidArgumentError, match="database_url"):
        check_url(url)


def test_the_setting_accepts_a_postgresql_url_from_the_environment_and_hides_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KNOWLEDGE_MCP_DATABASE_URL", "postgresql://a:pw@db/k")
    settings = load_settings()
    assert settings.database_url is not None
    assert settings.database_url.get_secret_value() == "postgresql://a:pw@db/k"
    assert "pw" not in repr(settings)  # a SecretStr


def test_the_setting_refuses_another_scheme_without_repeating_the_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KNOWLEDGE_MCP_DATABASE_URL", "mysql://a:pw@db/k")
    with pytest.raises(ConfigError, match=r"database_url: .*postgresql://") as info:
        load_settings()
    assert "pw@db" not in str(info.value)


async def test_rows_read_by_column_name_and_a_failed_transaction_leaves_nothing(pg_url: str) -> None:
    db = await open_pg(pg_url)
    try:
        await migrate(db, "notes", NOTES)
        await db.write("INSERT INTO notes (body, tags) VALUES (%s, %s)", ("first", "a"))
        with pytest.raises(RuntimeError):
            async with db.transaction() as conn:
                await conn.execute("INSERT INTO notes (body) VALUES (%s)", ("second",))
                raise RuntimeError("the import failed here")
        rows = await db.fetchall("SELECT body, tags FROM notes ORDER BY id")
        assert rows == [{"body": "first", "tags": "a"}]
        assert await db.fetchone("SELECT body FROM notes WHERE tags = %s", ("zzz",)) is None
    finally:
        await db.close()


async def test_migrations_apply_once_even_when_two_workers_start_together(pg_url: str) -> None:
    first, second = await open_pg(pg_url), await open_pg(pg_url)
    try:
        versions = await asyncio.gather(migrate(first, "notes", NOTES), migrate(second, "notes", NOTES))
        assert versions == [2, 2]
        assert await migrate(first, "notes", NOTES) == 2
        row = await first.fetchone("SELECT version FROM knowledge_schema WHERE component = 'notes'")
        assert row == {"version": 2}
        await first.write("INSERT INTO notes (body, tags) VALUES ('x', 'y')")
    finally:
        await first.close()
        await second.close()


async def test_a_schema_newer_than_the_code_is_refused(pg_url: str) -> None:
    db = await open_pg(pg_url)
    try:
        await migrate(db, "notes", NOTES)
        with pytest.raises(SchemaVersionError, match=r"newer than this knowledge-mcp supports"):
            await migrate(db, "notes", NOTES[:1])
    finally:
        await db.close()


async def test_an_unreachable_server_is_named_without_its_password() -> None:
    url = "postgresql://alice:s3cret@127.0.0.1:9/knowledge?connect_timeout=1"
    with pytest.raises(SourceUnavailableError, match="cannot be reached") as info:
        await open_pg(url)
    assert "s3cret" not in str(info.value)
    assert "alice:***@127.0.0.1:9" in str(info.value)
