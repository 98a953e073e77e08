"""Damage found, never absorbed: a SQLite database checked when it is opened, and remembered.

A database is checked with a bounded `PRAGMA quick_check` when it is opened, unless the same
file (device, inode, size, modification time) was checked clean before and was closed cleanly
(no write-ahead log left with frames in it: an unclean shutdown is checked again). The verdict
is kept beside the database in `<name>.db-checked` (a small JSON file, a cache: losing it only
costs a check), so a warm start skips the check. Corruption SQLite reports in any later
statement is remembered there too (`remember_damage`). A damaged database raises
`DamagedDatabaseError`: a `sqlite3.DatabaseError` with SQLite's own SQLITE_CORRUPT code, so
every layer that explains a broken database (`db.source_failure`, `db.storage_failure`)
explains this one in the same sentence, and nothing is written into it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from stat import S_ISREG
from typing import Any

from loguru import logger

CHECKED_SUFFIX = "-checked"
QUICK_CHECK_ERRORS = 5
"""`quick_check(N)`: stop after N findings (one is enough to call the file damaged)."""
QUICK_CHECK_SECONDS = 120.0
"""The longest a check at open may take; past it the file is served unchecked (and logged).
Far above what a check costs at the sizes measured (`docs/performance.md`, "The damage check")."""
CORRUPTION_CODES = {11, 26}
"""SQLITE_CORRUPT and SQLITE_NOTADB (primary codes): the file itself is damaged."""
WAL_HEADER_BYTES = 32
RACY_NS = 2_000_000_000

Stamp = tuple[int, int, int, int]


class DamagedDatabaseError(sqlite3.DatabaseError):
    """The database file is damaged; `problem` is what the check (or SQLite) found."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"database disk image is malformed: {problem}")
        self.path = path
        self.problem = problem
        self.sqlite_errorcode = 11
        self.sqlite_errorname = "SQLITE_CORRUPT"


def is_corruption(exc: BaseException) -> bool:
    """Whether `exc` is SQLite saying the file is damaged (not one statement failing)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        isinstance(exc, sqlite3.DatabaseError) and isinstance(code, int) and code & 0xFF in CORRUPTION_CODES
    )


def stamp(path: Path) -> Stamp | None:
    """Which file is at `path` and how it was last changed; None when there is no regular file."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not S_ISREG(info.st_mode):
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def record_path(path: Path) -> Path:
    return path.with_name(path.name + CHECKED_SUFFIX)


def read_record(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(record_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _write_record(path: Path, state: str, problem: str | None = None, *, closed: bool = False) -> None:
    """Remember the verdict for the file as it is now; a failure to write is only a cache miss."""
    current = stamp(path)
    if current is None:
        return
    target = record_path(path)
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    record = {"stamp": list(current), "state": state, "problem": problem, "at": time.time(), "closed": closed}
    try:
        temporary.write_text(json.dumps(record), encoding="utf-8")
        os.replace(temporary, target)
    except OSError:
        temporary.unlink(missing_ok=True)


def recorded_damage(path: Path) -> str | None:
    """What was found wrong with the file at `path` as it is now, when it was found damaged."""
    record = read_record(path)
    if record is None or record.get("state") != "damaged" or tuple(record.get("stamp") or ()) != stamp(path):
        return None
    return str(record.get("problem") or "recorded as damaged")


def remember_clean(path: Path, *, closed: bool = False) -> None:
    """The file as it is now is known good: checked, or (`closed`) closed cleanly by a connection
    that opened it known good and saw no damage (its own writes keep it good)."""
    _write_record(path, "ok", closed=closed)


def remember_damage(path: Path, problem: str) -> None:
    """SQLite reported damage in the file: every later open refuses it without a check."""
    _write_record(path, "damaged", problem)


def unclean_shutdown(path: Path) -> bool:
    """A write-ahead log with frames in it: the last writer did not close (or is still open)."""
    try:
        return os.path.getsize(f"{path}-wal") > WAL_HEADER_BYTES
    except OSError:
        return False


def _settled(record: dict[str, Any], current: Stamp) -> bool:
    """A check's verdict counts when it was reached well after the file's last change: a change
    in the same tick of the file system's clock (a few ms) would leave the stamp as it was (git's
    "racy clean" problem). A clean close's is trusted as it is: the last change was its own."""
    at = record.get("at")
    return bool(record.get("closed")) or (isinstance(at, int | float) and at * 1e9 - current[3] > RACY_NS)


def check_at_open(path: Path, *, budget_s: float = QUICK_CHECK_SECONDS) -> bool:
    """Raise DamagedDatabaseError when the database at `path` is damaged; whether it is known
    clean (checked now, or the same file was checked clean before and shut down cleanly).

    A file that is no SQLite database at all raises its own sqlite3 error; no file, an empty
    one, or a folder are left to the opener (they are not damage); a new file is known clean."""
    current = stamp(path)
    if current is None or current[2] == 0:
        return not os.path.isdir(path)  # a new (or empty) file: nothing in it to damage
    record = read_record(path)
    if record is not None and tuple(record.get("stamp") or ()) == current:
        if record.get("state") == "damaged":
            raise DamagedDatabaseError(path, str(record.get("problem") or "recorded as damaged"))
        if record.get("state") == "ok" and _settled(record, current) and not unclean_shutdown(path):
            return True
    findings = quick_check(path, budget_s)
    if findings is None:
        return False
    if findings:
        remember_damage(path, findings[0])
        raise DamagedDatabaseError(path, findings[0])
    remember_clean(path)
    return True


def quick_check(path: Path, budget_s: float = QUICK_CHECK_SECONDS) -> list[str] | None:
    """`PRAGMA quick_check` of the file: its findings ([] when clean), None when it ran out of
    time. Read-only, so nothing is written into a damaged file (not even a checkpoint)."""
    return _check(path, f"quick_check({QUICK_CHECK_ERRORS})", budget_s)


def integrity_check(path: Path, budget_s: float | None = None) -> list[str] | None:
    """The full `PRAGMA integrity_check` (indexes against tables too): slower, for `doctor`."""
    return _check(path, f"integrity_check({QUICK_CHECK_ERRORS})", budget_s)


def _check(path: Path, pragma: str, budget_s: float | None) -> list[str] | None:
    started = time.monotonic()
    try:
        conn = _open_read_only(path)
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF == 11:
            return [str(exc)]
        raise
    if budget_s is not None:
        deadline = started + budget_s
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 100_000)
    try:
        rows = conn.execute(f"PRAGMA {pragma}").fetchall()
    except sqlite3.OperationalError as exc:
        if "interrupted" not in str(exc):
            raise
        logger.warning("{} of {} stopped after {:.0f} s; served unchecked", pragma, path.name, budget_s)
        return None
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF == 11:
            return [str(exc)]
        raise
    finally:
        conn.close()
    lines = [line for row in rows for line in str(row[0]).splitlines()]
    findings = [line for line in lines if not line.startswith("*** in database")]
    logger.debug("{} of {}: {:.3f} s", pragma, path.name, time.monotonic() - started)
    return [] if findings == ["ok"] else findings


def _open_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection (no checkpoint on close); read-write when read-only cannot open a
    write-ahead log left behind (its index has to be rebuilt first)."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        conn.close()
        conn = sqlite3.connect(path, timeout=10)
    return conn
