"""A session store that cannot be loaded (a full disk, a damaged sessions.db) is one WARNING line
naming the cause, never a traceback; the tool call goes on without a session."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from loguru import logger

from knowledge_mcp.server.sessions.transport import preloaded

pytestmark = pytest.mark.anyio


def full_disk_error(tmp_path: Path) -> sqlite3.DatabaseError:
    """The error SQLite raises when a database cannot grow (SQLITE_FULL), from a real database."""
    conn = sqlite3.connect(tmp_path / "full.db")
    conn.execute("CREATE TABLE t (x TEXT)")
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")
    try:
        conn.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
    except sqlite3.DatabaseError as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError("the database grew past its limit")


async def logged_while_loading(exc: BaseException) -> tuple[list[str], bool]:
    async def load() -> Any:
        raise exc

    lines: list[str] = []
    sink = logger.add(lines.append, level="WARNING", format="{level} {message}")
    try:
        session = await preloaded(load)
    finally:
        logger.remove(sink)
    return lines, session is None


async def test_a_full_disk_while_loading_a_session_is_one_warning_line(tmp_path: Path) -> None:
    lines, answered = await logged_while_loading(full_disk_error(tmp_path))
    assert answered
    assert len(lines) == 1 and lines[0].startswith("WARNING session could not be loaded")
    assert "sessions.db cannot grow: the disk is full" in lines[0] and "Traceback" not in lines[0]


async def test_an_unexpected_failure_while_loading_a_session_keeps_its_traceback() -> None:
    lines, answered = await logged_while_loading(RuntimeError("a bug"))
    assert answered
    assert len(lines) == 1 and lines[0].startswith("ERROR session could not be loaded")
    assert "RuntimeError" in lines[0]  # with where it was raised (the log guard keeps out its values)
