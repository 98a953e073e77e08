"""`open_backend(settings)`: the backend chosen once, from `database_url` and `item_store`, and
what it hands out (items, sessions, keys, rate-limit buckets) in real files and a real database."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_mcp.server.auth.keys import SqliteKeyStore, keys_path
from knowledge_mcp.server.backend import has_active_keys, open_backend, opened
from knowledge_mcp.server.backend.sqlite import SqliteBackend, SqliteItems
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.storage.db import database_path

from ...conftest import FIXTURES


@pytest.mark.anyio
async def test_without_a_database_url_items_sessions_and_keys_are_sqlite_files(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    async with opened(settings) as backend:
        assert isinstance(backend, SqliteBackend)
        assert backend.buckets is None and not backend.stateless
        key = await backend.keys.create("alice")
        grant = await backend.keys.grant_for(key)
        assert grant is not None and grant.user_id == "alice"
        summary = await backend.items.import_files(
            "alice",
            "notes",
            database_path(tmp_path, "alice", "notes"),
            [FIXTURES / "notes"],
            prune=False,
            max_file_bytes=1 << 20,
        )
        assert summary.added >= 1
        session = await backend.sessions.open("alice", "s1")
        await session.record_results("tea", ["notes://a"])
    assert keys_path(tmp_path).exists()
    assert database_path(tmp_path, "alice", "notes").exists()
    assert (database_path(tmp_path, "alice", "notes").parent / "sessions.db").exists()


@pytest.mark.anyio
async def test_a_terminal_read_of_a_source_never_imported_finds_nothing_and_creates_nothing(
    tmp_path: Path,
) -> None:
    path = database_path(tmp_path, "local", "media")
    async with opened(Settings(data_dir=tmp_path)) as backend:
        assert await backend.items.reading("local", "media", path) is None
    assert not path.exists()


@pytest.mark.anyio
async def test_reading_the_keys_of_a_data_dir_without_keys_creates_no_keys_db(tmp_path: Path) -> None:
    store = SqliteKeyStore(tmp_path)
    try:
        assert await store.list() == []
        assert await store.grant_for("km_nothing") is None
        assert await store.active_count() == 0
        assert await store.revoke("km_nothing") is False
    finally:
        await store.close()
    assert not await has_active_keys(Settings(data_dir=tmp_path))
    assert not keys_path(tmp_path).exists()


@pytest.mark.anyio
async def test_a_key_made_through_one_backend_is_granted_by_the_next(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    async with opened(settings) as backend:
        key = await backend.keys.create("bob", ["write"])
    assert await has_active_keys(settings)
    async with opened(settings) as backend:
        grant = await backend.keys.grant_for(key)
        assert grant is not None and grant.user_id == "bob" and "write" in grant.scopes


def test_a_server_without_a_database_url_never_imports_psycopg(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from knowledge_mcp.server.app import build_server\n"
        "from knowledge_mcp.server.config import Settings\n"
        f"build_server(Settings(data_dir={str(tmp_path)!r}), authenticate=False)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'psycopg'))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.anyio
async def test_a_database_url_keeps_sessions_keys_and_limits_in_postgresql(
    tmp_path: Path, pg_url: str
) -> None:
    settings = Settings(data_dir=tmp_path, database_url=pg_url)
    async with opened(settings) as backend:
        assert backend.stateless and backend.buckets is not None
        assert isinstance(backend.items, SqliteItems)  # item_store = "sqlite": the files
        key = await backend.keys.create("carol")
        assert await backend.buckets.take("carol", "notes_search", 5) is None
    assert not keys_path(tmp_path).exists()
    async with opened(settings) as backend:
        grant = await backend.keys.grant_for(key)
        assert grant is not None and grant.user_id == "carol"


@pytest.mark.anyio
async def test_item_store_postgresql_puts_the_items_in_postgresql_too(tmp_path: Path, pg_url: str) -> None:
    settings = Settings(data_dir=tmp_path, database_url=pg_url, item_store="postgresql")
    path = database_path(tmp_path, "dana", "notes")
    async with opened(settings) as backend:
        summary = await backend.items.import_files(
            "dana", "notes", path, [FIXTURES / "notes"], prune=False, max_file_bytes=1 << 20
        )
        assert summary.added >= 1
        assert await backend.items.reading("dana", "notes", path) is not None
    assert not path.exists()


def test_open_backend_opens_nothing_until_used(tmp_path: Path) -> None:
    backend = open_backend(Settings(data_dir=tmp_path / "never"))
    assert not (tmp_path / "never").exists()
    assert backend.pool.background is None
