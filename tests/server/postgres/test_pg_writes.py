"""notes_create / notes_update with `item_store = "postgresql"`: the note's file written in the
folder the notes were imported from, indexed into PostgreSQL at once (nothing in SQLite), with
versions, expected_version and the duplicate check; two servers on one database updating one
note serialise on the user's advisory lock (no lost update)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.server.cli.commands import run_import
from knowledge_mcp.server.cli.migrate import run_migrate
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.storage.db import database_path

from ...conftest import FIXTURES, call, error, import_into

pytestmark = pytest.mark.anyio

STARTER = (
    "Feed the sourdough starter twice a day with equal weights of rye flour and water; "
    "keep it near 24 degrees and discard half before each feeding."
)


@pytest.fixture
async def vault(tmp_path: Path, data_dir: Path, pg_url: str) -> Path:
    """A copy of the fixture vault imported into PostgreSQL only."""
    folder = Path(shutil.copytree(FIXTURES / "notes", tmp_path / "vault"))
    settings = Settings(data_dir=data_dir, item_store="postgresql", database_url=pg_url)
    summary = await run_import(settings, "notes", [folder], False)
    assert summary.files_failed == 0 and summary.added > 5
    return folder


async def test_a_created_note_is_written_to_the_imported_folder_and_found_at_once_in_postgresql(
    pg_servers: Any, vault: Path, data_dir: Path
) -> None:
    async with pg_servers("postgresql") as pg:
        made = await call(pg, "notes_create", title="Starter care", content=STARTER, tags=["baking"])
        found = await call(pg, "notes_search", query="rye starter discard")
        everywhere = await call(pg, "knowledge_search", query="rye starter discard")
        got = await call(pg, "notes_get", note_id=made["uri"])
    assert made["version"] == 1 and made["path"] == "Starter care.md"
    assert (vault / "Starter care.md").read_text(encoding="utf-8").endswith(STARTER + "\n")
    assert found["results"][0]["uri"] == made["uri"]
    assert made["uri"] in [hit["uri"] for hit in everywhere["results"]]
    assert (
        got["meta"].get("version", 1) == 1
        and STARTER in got["content"]
        and got["meta"]["title"] == "Starter care"
    )
    assert not database_path(data_dir, "local", "notes").exists()  # PostgreSQL only


async def test_an_update_is_a_new_version_and_a_stale_expected_version_changes_nothing(
    pg_servers: Any, vault: Path
) -> None:
    async with pg_servers("postgresql") as pg:
        made = await call(pg, "notes_create", title="Starter care", content=STARTER)
        updated = await call(pg, "notes_update", note_id=made["uri"], append="Rye only.", expected_version=1)
        before = (vault / "Starter care.md").read_bytes()
        stale = await error(pg, "notes_update", note_id=made["uri"], content="lost edit", expected_version=1)
        again = await call(pg, "notes_get", note_id=made["uri"])
        lost = await call(pg, "notes_search", query="lost edit")
    assert updated["version"] == 2 and "expected_version: the note is at version 2, not 1" in stale
    assert (vault / "Starter care.md").read_bytes() == before
    assert (
        again["meta"]["version"] == 2
        and "Rye only." in again["content"]
        and "lost edit" not in again["content"]
    )
    assert made["uri"] not in [hit["uri"] for hit in lost["results"]]


async def test_a_near_copy_of_an_imported_note_is_reported_by_the_postgresql_duplicate_check(
    pg_servers: Any, vault: Path
) -> None:
    original = (vault / "recipes" / "sourdough-country-loaf.md").read_text(encoding="utf-8")
    body = original.split("---", 2)[2]  # the text after the front matter
    async with pg_servers("postgresql") as pg:
        hit = (await call(pg, "notes_search", query="country loaf levain"))["results"][0]
        made = await call(pg, "notes_create", title="Country loaf again", content=body)
        other = await call(pg, "notes_create", title="Garden", content="Tomatoes want water at dawn.")
    assert made["provider"] == "lexical" and made["recommendation"] == "review_first"
    assert made["duplicates"][0]["uri"] == hit["uri"] and made["duplicates"][0]["similarity"] >= 0.85
    assert "duplicates" not in other


async def test_two_servers_updating_one_note_never_lose_an_update(pg_servers: Any, vault: Path) -> None:
    rounds = 6
    async with pg_servers("postgresql") as one, pg_servers("postgresql") as two:
        made = await call(one, "notes_create", title="Shared log", content="Entries:")

        async def append(client: Any, n: int) -> int:
            answer = await call(client, "notes_update", note_id=made["uri"], append=f"entry {n}")
            return int(answer["version"])

        versions = await asyncio.gather(*(append(one if n % 2 else two, n) for n in range(2 * rounds)))
        final = await call(two, "notes_get", note_id=made["uri"])
    assert sorted(versions) == list(range(2, 2 * rounds + 2))  # each write its own version
    assert final["meta"]["version"] == 2 * rounds + 1
    text = (vault / "Shared log.md").read_text(encoding="utf-8")
    assert all(f"entry {n}" in text and f"entry {n}" in final["content"] for n in range(2 * rounds))


async def test_after_migrate_to_postgresql_new_notes_go_into_the_folder_imported_on_sqlite(
    pg_servers: Any, tmp_path: Path, data_dir: Path, pg_url: str
) -> None:
    folder = Path(shutil.copytree(FIXTURES / "notes" / "recipes", tmp_path / "recipes"))
    await import_into(data_dir, "notes", folder)
    settings = Settings(data_dir=data_dir, item_store="postgresql", database_url=pg_url)
    [report] = await run_migrate(settings, pg_url, ["notes"])
    assert report["verified"], report
    async with pg_servers("postgresql") as pg:
        made = await call(pg, "notes_create", title="Starter care", content=STARTER)
        found = await call(pg, "notes_search", query="rye starter discard")
    assert (folder / "Starter care.md").is_file() and made["path"] == "Starter care.md"
    assert found["results"][0]["uri"] == made["uri"]


async def test_a_first_note_into_an_empty_postgresql_store_goes_to_the_users_notes_folder(
    pg_servers: Any, data_dir: Path
) -> None:
    async with pg_servers("postgresql") as pg:
        made = await call(pg, "notes_create", title="First", content="The very first zqfirst note.")
        found = await call(pg, "notes_search", query="zqfirst")
    assert (data_dir / "users" / "local" / "notes" / "First.md").is_file()
    assert made["version"] == 1 and [hit["uri"] for hit in found["results"]] == [made["uri"]]


async def test_the_notes_quota_counts_the_users_files_recorded_in_postgresql(pg_servers: Any) -> None:
    body = STARTER * 25  # about 3.7 KB a note; the quota is 10 KB
    async with pg_servers("postgresql", notes_quota_mb=0.01, duplicate_check_ms=0) as pg:
        await call(pg, "notes_create", title="One", content=body)
        await call(pg, "notes_create", title="Two", content=body)
        over = await error(pg, "notes_create", title="Three", content=body)
    assert "content:" in over and "more than your quota of 10,000" in over
