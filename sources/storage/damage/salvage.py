"""What can still be read from a damaged source database, for `knowledge-mcp repair`.

Read-only and row by row where a whole table cannot be read: the files and folders the source
was imported from (`<p>_folders`, `<p>_files`), each item's title and file (to say which could
not be recovered), and the chunks' vectors with the text each was computed from (so the
rebuilt chunks whose text is unchanged get them back without embedding again). Whatever a
damaged page hides is counted in `rows_lost`, never guessed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RANGE_ROWS = 500


@dataclass
class Salvage:
    """What was read from one damaged database."""

    paths: list[tuple[str, bool]] = field(default_factory=list)
    """The files and folders given to its imports (path, is a folder)."""
    files: list[str] = field(default_factory=list)
    """Every file it had items from."""
    items: list[tuple[str, str]] = field(default_factory=list)
    """Its items: (title, the file it came from)."""
    vectors: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    """Vectors by text hash: (windows, float32 bytes)."""
    texts: dict[tuple[str, str], str] = field(default_factory=dict)
    """The text hash of each chunk (title, body) that had vectors."""
    rows_lost: int = 0
    """Rows that could not be read (in ranges a damaged page made unreadable)."""
    readable: bool = True
    """False when nothing could be read at all (not a SQLite file any more)."""


def salvage(path: Path, p: str) -> Salvage:
    """Read what can be read from source `p`'s damaged database at `path`."""
    found = Salvage()
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    except sqlite3.DatabaseError:
        found.readable = False
        return found
    try:
        tables = _tables(conn)
        if tables is None:
            found.readable = False
            return found
        found.paths = [
            (str(r[0]), bool(r[1])) for r in _rows(conn, found, tables, f"{p}_folders", "path, is_folder")
        ]
        found.files = [str(r[0]) for r in _rows(conn, found, tables, f"{p}_files", "path")]
        found.items = [
            (str(r[0]), str(r[1])) for r in _rows(conn, found, tables, f"{p}_items", "title, source_path")
        ]
        _vectors(conn, found, tables, p)
    finally:
        conn.close()
    return found


def _vectors(conn: sqlite3.Connection, found: Salvage, tables: set[str], p: str) -> None:
    hashes = {
        int(r[0]): str(r[1]) for r in _rows(conn, found, tables, f"{p}_chunk_vectors", "chunk_id, text_hash")
    }
    if not hashes:
        return
    for row in _rows(conn, found, tables, f"{p}_chunks", "id, title, body"):
        text_hash = hashes.get(int(row[0]))
        if text_hash is not None:
            found.texts[(str(row[1]), str(row[2]))] = text_hash
    used = set(found.texts.values())
    for row in _rows(conn, found, tables, f"{p}_vectors", "text_hash, windows, vectors"):
        if row[0] in used:
            found.vectors[str(row[0])] = (int(row[1]), bytes(row[2]))


def _tables(conn: sqlite3.Connection) -> set[str] | None:
    try:
        return {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError:
        return None


def _rows(conn: sqlite3.Connection, found: Salvage, tables: set[str], table: str, columns: str) -> list[Any]:
    """Every readable row of `table`: all at once, else in rowid ranges, else one by one."""
    if table not in tables:
        return []
    try:
        return conn.execute(f"SELECT {columns} FROM {table}").fetchall()
    except sqlite3.DatabaseError:
        pass
    rows: list[Any] = []
    for low, high in _ranges(conn, table):
        try:
            ranged = f"SELECT {columns} FROM {table} WHERE rowid BETWEEN ? AND ?"
            rows += conn.execute(ranged, (low, high)).fetchall()  # all or none of the range
            continue
        except sqlite3.DatabaseError:
            pass
        for rowid in range(low, high + 1):
            try:
                rows += conn.execute(f"SELECT {columns} FROM {table} WHERE rowid = ?", (rowid,)).fetchall()
            except sqlite3.DatabaseError:
                found.rows_lost += 1
    return rows


def _ranges(conn: sqlite3.Connection, table: str) -> Iterator[tuple[int, int]]:
    try:
        row = conn.execute(f"SELECT min(rowid), max(rowid) FROM {table}").fetchone()
    except sqlite3.DatabaseError:
        return
    if row is None or row[0] is None:
        return
    for low in range(int(row[0]), int(row[1]) + 1, RANGE_ROWS):
        yield low, min(low + RANGE_ROWS - 1, int(row[1]))
