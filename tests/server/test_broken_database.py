"""A broken source database explained: a real notes.db overwritten with garbage, truncated, or
with a damaged page makes the notes tools answer one sentence naming the source, the cause and
the remedy (no traceback, no path), while knowledge_search answers from the other sources."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.storage.db import source_failure
from tests.conftest import FIXTURES, error, import_into, source_of

pytestmark = pytest.mark.anyio


def garbage(db: Path) -> None:
    db.write_bytes(b"this is not a database at all\n" * 400)


def truncated(db: Path) -> None:
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 3])


def damaged_page(db: Path) -> None:
    data = bytearray(db.read_bytes())
    data[4096:8192] = b"\xff" * 4096  # the second page: the schema still reads, the tables do not
    db.write_bytes(bytes(data))


async def import_notes_and_media(data_dir: Path) -> Path:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    await import_into(data_dir, "media", FIXTURES / "media")
    db = data_dir / "users" / "local" / "notes.db"
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return db


def assert_explained(text: str, data_dir: Path, cause: str) -> None:
    assert "the notes database is damaged" in text
    assert cause in text
    assert "run `knowledge-mcp repair notes` (it keeps the damaged file aside" in text
    assert str(data_dir) not in text and "Traceback" not in text


@pytest.mark.parametrize(
    ("damage", "cause"),
    [
        (garbage, "file is not a database"),
        (truncated, "database disk image is malformed"),
        (damaged_page, "database disk image is malformed"),
    ],
)
async def test_a_broken_notes_database_names_the_source_the_cause_and_the_remedy(
    client_factory: Callable[..., Any], data_dir: Path, damage: Callable[[Path], None], cause: str
) -> None:
    damage(await import_notes_and_media(data_dir))
    async with client_factory() as client:
        assert_explained(await error(client, "notes_search", query="levain"), data_dir, cause)
        # checked when opened: even a get that reads no damaged page names the damage
        assert_explained(await error(client, "notes_get", note_id="any"), data_dir, cause)


async def test_knowledge_search_answers_from_the_other_sources_and_names_the_broken_one(
    client_factory: Callable[..., Any], data_dir: Path
) -> None:
    garbage(await import_notes_and_media(data_dir))
    async with client_factory() as client:
        result = await client.call_tool("knowledge_search", {"query": "solar panel"})
    assert not result.is_error
    found = result.structured_content
    assert found["results"] and {source_of(r) for r in found["results"]} == {"media"}
    assert found["degraded"] is True and found["provider_hint"].split(", ")[0] == "notes"
    warning = next(w for w in found["warnings"] if w.startswith("notes:"))
    assert_explained(warning, data_dir, "file is not a database")


async def test_the_remedy_works_without_restarting_the_server(
    client_factory: Callable[..., Any], data_dir: Path, tmp_path: Path
) -> None:
    db = await import_notes_and_media(data_dir)
    async with client_factory() as client:
        assert (await client.call_tool("notes_search", {"query": "levain"})).structured_content["count"] >= 1
        damaged_page(db)  # broken under a running server, whose connection is open
        assert "damaged" in await error(client, "notes_search", query="levain")
        shutil.move(db, tmp_path / "notes.db.broken")  # the remedy the error gives
        await import_into(data_dir, "notes", FIXTURES / "notes")
        again = await client.call_tool("notes_search", {"query": "levain"})
    assert not again.is_error, again.content[0].text
    assert again.structured_content["count"] >= 1


def storage_error(code: int, text: str = "an error") -> sqlite3.DatabaseError:
    exc = sqlite3.DatabaseError(text)
    exc.sqlite_errorcode = code  # type: ignore[attr-defined]  # as SQLite sets it
    return exc


@pytest.mark.parametrize(
    ("code", "source", "user", "says"),
    [
        (
            26,
            "notes",
            "local",
            "the notes database is damaged (file is not a database); run `knowledge-mcp repair notes`",
        ),
        (11, "media", "local", "run `knowledge-mcp repair media` (it keeps the damaged file aside"),
        (11, "chats", "alice", "run `knowledge-mcp repair chats --user alice`"),
        (267, "notes", "local", "database disk image is malformed"),  # SQLITE_CORRUPT_VTAB: primary 11
        (
            13,
            "prompts",
            "local",
            "the prompts database cannot be written: the disk is full; free some disk space",
        ),
        (5, "characters", "local", "is locked by another process; try again when that process has finished"),
        (
            26,
            None,
            "local",
            "a source database is damaged (file is not a database); run `knowledge-mcp repair SOURCE`",
        ),
    ],
)
def test_a_database_failure_is_one_sentence_with_its_remedy(
    code: int, source: str | None, user: str, says: str
) -> None:
    failure = source_failure(storage_error(code), source, user)
    assert failure is not None
    assert says in str(failure)
    assert "\n" not in str(failure) and "/" not in str(failure)


@pytest.mark.parametrize(
    "exc",
    [storage_error(1, "no such column: x"), storage_error(19, "UNIQUE constraint failed"), ValueError("x")],
)
def test_a_failure_of_one_statement_is_not_a_broken_database(exc: BaseException) -> None:
    assert source_failure(exc, "notes") is None


async def test_knowledge_get_of_an_item_in_a_broken_source_names_that_source(
    client_factory: Callable[..., Any], data_dir: Path
) -> None:
    garbage(await import_notes_and_media(data_dir))
    async with client_factory() as client:
        text = await error(client, "knowledge_get", uri="notes://any-note")
    assert_explained(text, data_dir, "file is not a database")
