"""Damage found when a database is opened (a bounded quick_check, remembered per file) and when
any statement meets it; a damaged database refuses every write."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from pathlib import Path
from unittest.mock import patch

import pytest

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.damage import integrity
from knowledge_mcp.sources.storage.db import open_database
from tests.conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio


async def notes_db(data_dir: Path) -> Path:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    db = data_dir / "users" / "local" / "notes.db"
    os.utime(db, ns=(time.time_ns() - 10**10,) * 2)  # settled: last changed 10 s ago
    return db


async def test_a_database_left_with_a_write_ahead_log_is_checked_again(data_dir: Path) -> None:
    db = await notes_db(data_dir)
    assert integrity.check_at_open(db)
    first = integrity.read_record(db)
    assert first is not None
    writer = sqlite3.connect(db)  # a writer that never closes: its frames stay in the log
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("UPDATE notes_items SET title = title || '!' WHERE id = 1")
        writer.commit()
        assert integrity.unclean_shutdown(db)
        assert integrity.check_at_open(db)
    finally:
        writer.close()
    again = integrity.read_record(db)
    assert again is not None and again["at"] != first["at"]  # a new verdict: it was checked


async def test_damage_a_statement_meets_is_remembered_and_refuses_writes(data_dir: Path) -> None:
    db_path = await notes_db(data_dir)
    db = await open_database(db_path, get_source("notes").migrations)
    try:
        raw = bytearray(db_path.read_bytes())
        raw[4096:8192] = b"\xff" * 4096  # a page breaks under the open connection
        db_path.write_bytes(bytes(raw))
        before = hashlib.sha256(db_path.read_bytes()).hexdigest()
        with pytest.raises(sqlite3.DatabaseError):
            await db.fetchall("SELECT count(*), max(length(content)) FROM notes_items")
        assert db.damaged is not None
        with pytest.raises(integrity.DamagedDatabaseError):
            await db.write("DELETE FROM notes_items")
        with pytest.raises(integrity.DamagedDatabaseError):
            async with db.transaction():
                pass
        assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before
    finally:
        await db.conn.close()
    record = integrity.read_record(db_path)
    assert record is not None and record["state"] == "damaged"
    with pytest.raises(integrity.DamagedDatabaseError):  # the next open refuses it at once
        await open_database(db_path, get_source("notes").migrations)


async def test_a_new_or_empty_file_is_known_clean_without_a_check(tmp_path: Path) -> None:
    assert integrity.check_at_open(tmp_path / "missing.db") is True
    (tmp_path / "empty.db").write_bytes(b"")
    assert integrity.check_at_open(tmp_path / "empty.db") is True
    assert integrity.read_record(tmp_path / "empty.db") is None
    assert integrity.check_at_open(tmp_path) is False  # a folder: left to the opener's error


async def test_a_database_closed_cleanly_is_not_checked_at_its_next_open(data_dir: Path) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")  # a new file: known clean, closed cleanly
    db = data_dir / "users" / "local" / "notes.db"
    record = integrity.read_record(db)
    assert record is not None and record["state"] == "ok" and record["closed"] is True
    with patch.object(integrity, "quick_check", side_effect=AssertionError("checked again")):
        opened = await open_database(db, get_source("notes").migrations)
        await opened.close()
        assert opened.checked
