"""A database damaged in the middle (random bytes at a third of notes.db) is named and refused,
never written into, and `knowledge-mcp repair` rebuilds it from the files it was imported from."""

from __future__ import annotations

import hashlib
import os
import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import patch

import anyio
import numpy as np
import pytest

from knowledge_mcp.server.cli import main
from knowledge_mcp.server.cli.damage.findings import damage_of
from knowledge_mcp.sources.storage.damage import integrity
from tests.conftest import FIXTURES, call, error, import_into, source_of
from tests.server.cli.test_doctor import line, run

pytestmark = pytest.mark.anyio

NOTES = 240
VECTOR = (np.ones(384, dtype=np.float32) / np.sqrt(384)).tobytes()
"""One window of the bundled model's size (384), so the rebuilt source's semantic search reads it."""
REMEDY = "run `knowledge-mcp repair notes` (it keeps the damaged file aside"


def write_notes(folder: Path) -> None:
    words = [
        "levain",
        "crumb",
        "hydration",
        "starter",
        "oven",
        "steam",
        "proof",
        "flour",
        "rye",
        "spelt",
        "scoring",
        "banneton",
    ]
    rng = random.Random(7)
    folder.mkdir(parents=True)
    for n in range(NOTES):
        body = " ".join(rng.choice(words) for _ in range(400))
        (folder / f"note-{n:03}.md").write_text(f"# Bread note {n}\n\n{body}\n", encoding="utf-8")


def damage_in_the_middle(db: Path) -> None:
    """64 KiB of random bytes written at a third of the file, as the storage-fault probe does."""
    data = bytearray(db.read_bytes())
    at = len(data) // 3
    data[at : at + 65536] = random.Random(29).randbytes(65536)
    db.write_bytes(bytes(data[: len(data)]))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ids_and_texts(db: Path) -> tuple[list[str], set[tuple[str, str]]]:
    conn = sqlite3.connect(db)
    try:
        ids = [r[0] for r in conn.execute("SELECT item_id FROM notes_items ORDER BY source_path")]
        texts = set(conn.execute("SELECT title, body FROM notes_chunks"))
    finally:
        conn.close()
    return ids, texts


def text_hash(title: str, body: str) -> str:
    return hashlib.sha256(f"test\x00{title}\x00{body}".encode()).hexdigest()[:32]


def give_vectors(db: Path) -> int:
    """Vectors for every chunk (as `embed` stores them: by text hash), without a model."""
    conn = sqlite3.connect(db)
    with conn:
        chunks = conn.execute("SELECT id, title, body FROM notes_chunks").fetchall()
        for chunk_id, title, body in chunks:
            hashed = text_hash(title, body)
            conn.execute(
                "INSERT OR IGNORE INTO notes_vectors (text_hash, windows, vectors) VALUES (?, 1, ?)",
                (hashed, VECTOR),
            )
            conn.execute(
                "INSERT INTO notes_chunk_vectors (chunk_id, text_hash) VALUES (?, ?)", (chunk_id, hashed)
            )
    conn.close()
    return len(chunks)


async def damaged_store(data_dir: Path, tmp_path: Path) -> tuple[Path, Path, list[str]]:
    folder = tmp_path / "vault"
    write_notes(folder)
    await import_into(data_dir, "notes", folder)
    await import_into(data_dir, "media", FIXTURES / "media")
    db = data_dir / "users" / "local" / "notes.db"
    ids, _ = ids_and_texts(db)
    give_vectors(db)
    damage_in_the_middle(db)
    return db, folder, ids


async def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The real command line (its own event loop, on a worker thread); exit status, stdout, stderr."""
    code = await anyio.to_thread.run_sync(main, list(args))
    out, err = capsys.readouterr()
    return code, out, err


async def test_import_into_a_database_damaged_in_the_middle_exits_non_zero_and_writes_nothing(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, folder, _ = await damaged_store(data_dir, tmp_path)
    before = digest(db)
    (folder / "new.md").write_text("# A new note\n\nwritten after the damage\n", encoding="utf-8")
    code, out, err = await cli(capsys, "import", "notes", str(folder), "--data-dir", str(data_dir))
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "is damaged" in err and "run `knowledge-mcp repair notes`" in err
    assert "Traceback" not in err
    wal = Path(f"{db}-wal")
    assert digest(db) == before and (not wal.exists() or wal.stat().st_size == 0)  # no frame either


async def test_search_and_get_name_the_damage_and_knowledge_search_answers_from_the_others(
    client_factory: Callable[..., Any], data_dir: Path, tmp_path: Path
) -> None:
    _, _, ids = await damaged_store(data_dir, tmp_path)
    async with client_factory() as client:
        searched = await error(client, "notes_search", query="levain")
        got = await error(client, "notes_get", note_id=ids[0])
        found = await call(client, "knowledge_search", query="solar panel")
    for text in (searched, got):
        assert "the notes database is damaged" in text and REMEDY in text and "no item" not in text
    assert found["degraded"] is True and found["results"]
    assert {source_of(r) for r in found["results"]} == {"media"}
    assert any(
        w.startswith("notes: the notes database is damaged") and REMEDY in w for w in found["warnings"]
    )


async def test_notes_create_is_refused_in_a_damaged_database(
    client_factory: Callable[..., Any], data_dir: Path, tmp_path: Path
) -> None:
    db, _, _ = await damaged_store(data_dir, tmp_path)
    before = digest(db)
    async with client_factory(notes_dir=tmp_path / "vault") as client:
        text = await error(client, "notes_create", title="Another", content="levain and more")
    assert "the notes database is damaged" in text and REMEDY in text
    assert digest(db) == before


async def test_repair_restores_every_item_whose_file_exists_and_their_vectors(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, folder, ids = await damaged_store(data_dir, tmp_path)
    gone = sorted(folder.iterdir())[:2]
    for path in gone:
        path.unlink()
    damaged = digest(db)
    assert damage_of(db) is not None

    code, out, _ = await cli(capsys, "repair", "notes", "--data-dir", str(data_dir))

    assert code == 2  # something could not be recovered: the two notes whose files are gone
    assert f"{NOTES - 2} item(s) restored" in out
    assert out.count("not recovered: Bread note") == 2 and all(str(p) in out for p in gone)
    kept = next(db.parent.glob("notes.db.damaged-*Z"))  # beside it: its -wal and -shm
    assert digest(kept) == damaged  # moved aside, never changed or deleted
    restored, texts = ids_and_texts(db)
    assert sorted(restored) == sorted(ids[2:])  # the same ids: the same uris as before
    conn = sqlite3.connect(db)
    links = conn.execute("""SELECT c.title, c.body, v.text_hash FROM notes_chunk_vectors AS v
        JOIN notes_chunks AS c ON c.id = v.chunk_id JOIN notes_vectors AS w USING (text_hash)""").fetchall()
    conn.close()
    # each chunk got back the vectors of its own text; those on the damaged pages are gone
    assert all(h == text_hash(title, body) for title, body, h in links)
    assert len(texts) * 0.8 < len(links) <= len(texts)
    assert f"{len(links)} chunk(s) got their vectors back" in out
    assert damage_of(db) is None


async def test_after_repair_the_server_answers_from_the_rebuilt_source(
    client_factory: Callable[..., Any], data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await damaged_store(data_dir, tmp_path)
    async with client_factory() as client:
        assert "damaged" in await error(client, "notes_search", query="levain")
        assert (await cli(capsys, "repair", "notes", "--data-dir", str(data_dir)))[0] == 0
        found = await call(client, "notes_search", query="levain")
    assert found["count"] >= 1


async def test_repair_of_a_sound_database_changes_nothing(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    db = data_dir / "users" / "local" / "notes.db"
    code, _, err = await cli(capsys, "repair", "notes", "--data-dir", str(data_dir))
    assert code == 1 and "passes SQLite's integrity check; nothing to repair" in err
    assert db.exists() and not list(db.parent.glob("notes.db.damaged-*"))


async def test_a_clean_check_is_remembered_until_the_file_changes(data_dir: Path) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    db = data_dir / "users" / "local" / "notes.db"
    os.utime(db, ns=(time.time_ns() - 10**10,) * 2)  # last changed 10 s ago, as at a start
    assert integrity.check_at_open(db) is True
    record = integrity.read_record(db)
    assert record is not None and record["state"] == "ok"
    with patch.object(integrity, "quick_check", side_effect=AssertionError("checked again")):
        assert integrity.check_at_open(db) is True  # the same file, settled: not checked again
    damage_in_the_middle(db)  # a new modification time: checked again, and found
    with pytest.raises(integrity.DamagedDatabaseError):
        integrity.check_at_open(db)
    assert integrity.read_record(db)["state"] == "damaged"  # type: ignore[index]


async def test_a_terminal_search_names_the_damage_in_one_line(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await damaged_store(data_dir, tmp_path)
    code, out, err = await cli(capsys, "search", "levain", "--source", "notes", "--data-dir", str(data_dir))
    assert code == 1 and out == ""
    assert err.startswith("knowledge-mcp: the notes database is damaged") and REMEDY in err
    assert "Traceback" not in err


async def test_repair_of_a_file_that_is_no_database_any_more_says_to_import_again(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _, _ = await damaged_store(data_dir, tmp_path)
    garbage = b"this is not a database at all\n" * 400
    db.write_bytes(garbage)
    code, out, _ = await cli(capsys, "repair", "notes", "--data-dir", str(data_dir))
    assert code == 2 and "0 item(s) restored" in out
    assert "holds no record of what was imported into it" in out and "knowledge-mcp import notes" in out
    assert next(db.parent.glob("notes.db.damaged-*Z")).read_bytes() == garbage


async def test_doctor_reports_the_damage_before_repair_and_a_clean_store_after(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await damaged_store(data_dir, tmp_path)
    home = tmp_path / "home"  # no host configs to report on
    with anyio.fail_after(120):
        before = await anyio.to_thread.run_sync(doctor, data_dir, home)
        assert (await cli(capsys, "repair", "notes", "--data-dir", str(data_dir)))[0] == 0
        after = await anyio.to_thread.run_sync(doctor, data_dir, home)
    failed = line(before.stdout, "notes db")
    assert failed.startswith("FAIL") and "damaged" in failed
    assert "fix: run `knowledge-mcp repair notes`" in before.stdout
    assert "notes db" not in after.stdout and "user local" in after.stdout
    assert "Traceback" not in before.stderr + after.stderr


def doctor(data_dir: Path, home: Path) -> Any:
    return run("doctor", "--data-dir", str(data_dir), home=home)
