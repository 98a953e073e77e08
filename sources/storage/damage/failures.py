"""One sentence for a database that cannot be used: the cause and the remedy.

A SQLite error that concerns the whole file (damaged, full, unopenable, locked) is explained by
its primary result code; an error of one statement (a constraint, a missing column) is not
this module's and gets None.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ...errors import SourceUnavailableError
from ..users import user_of_folder

STORAGE_FAILURES = {
    "SQLITE_NOTADB": "is not a knowledge-mcp database (not SQLite at all)",
    "SQLITE_CORRUPT": "is damaged (database disk image is malformed)",
    "SQLITE_FULL": "cannot grow: the disk is full",
    "SQLITE_IOERR": "could not be read or written (I/O error)",
    "SQLITE_CANTOPEN": "cannot be opened (is it a folder, or in a folder you cannot write?)",
    "SQLITE_READONLY": "is read-only",
    "SQLITE_PERM": "may not be written (permission denied)",
    "SQLITE_BUSY": "is locked by another process",
    "SQLITE_LOCKED": "is locked by another process",
}
"""SQLite errors that concern the whole database, not the item being written (by primary code)."""
STORAGE_REMEDIES = {
    "SQLITE_NOTADB": "repair",
    "SQLITE_CORRUPT": "repair",
    "SQLITE_FULL": "free some disk space and run the import again; what was imported is kept",
    "SQLITE_CANTOPEN": "make it a writable file (or remove it) and run the import again",
    "SQLITE_BUSY": "wait for the other process, then run the import again",
    "SQLITE_LOCKED": "wait for the other process, then run the import again",
}


def database_problem(exc: BaseException) -> str | None:
    """What is wrong with a whole database when `exc` says so ("cannot grow: the disk is full"),
    else None."""
    key = _primary_name(exc)
    return STORAGE_FAILURES[key] if key is not None else None


def storage_failure(exc: BaseException, path: Path) -> SourceUnavailableError | None:
    """A one-line reason and remedy when `exc` means the database at `path` is unusable (broken,
    full, unopenable), else None (the error concerns one item and the import may go on)."""
    key = _primary_name(exc)
    if key is None:
        return None
    remedy = STORAGE_REMEDIES.get(key, "check the file and the disk, then run the import again")
    if remedy == "repair":
        repair = repair_command(path.stem, user_of_folder(path.parent.name) or path.parent.name)
        remedy = f"nothing more is written into it; {repair} {REPAIR_DOES}"
    return SourceUnavailableError(f"database {path} {STORAGE_FAILURES[key]}: {remedy}")


REPAIR_DOES = "(it keeps the damaged file aside and rebuilds the source from your files)"


def repair_command(source: str, user: str) -> str:
    """`run `knowledge-mcp repair notes`` (with `--user` for any user but the local one)."""
    return f"run `knowledge-mcp repair {source}" + ("`" if user == "local" else f" --user {user}`")


SOURCE_FAILURES = {
    "SQLITE_NOTADB": ("is damaged (file is not a database)", "rebuild"),
    "SQLITE_CORRUPT": ("is damaged (database disk image is malformed)", "rebuild"),
    "SQLITE_FULL": ("cannot be written: the disk is full", "free some disk space and try again"),
    "SQLITE_IOERR": ("could not be read (I/O error)", "check the disk, then try again"),
    "SQLITE_CANTOPEN": ("cannot be opened", "make the file readable, or rebuild"),
    "SQLITE_READONLY": ("is read-only", "make the file writable and try again"),
    "SQLITE_PERM": ("may not be read or written (permission denied)", "fix the file's permissions"),
    "SQLITE_BUSY": ("is locked by another process", "try again when that process has finished"),
    "SQLITE_LOCKED": ("is locked by another process", "try again when that process has finished"),
}
"""What a tool says when a source's database is unusable: (cause, remedy); "rebuild" is spelled
out by `source_failure` with the source's own import command."""


def source_failure(
    exc: BaseException, source: str | None, user: str = "local"
) -> SourceUnavailableError | None:
    """One sentence for a tool whose `source` database is unusable (damaged, full, unopenable):
    the source, the cause and the remedy, never the file's path; None when `exc` is no such error
    (a failure of one statement, not of the file). `source` None: a tool that reads several."""
    key = _primary_name(exc)
    if key is None:
        return None
    cause, remedy = SOURCE_FAILURES[key]
    if source is None:
        rebuild = "run `knowledge-mcp repair SOURCE` for the source its own search tool names"
        return SourceUnavailableError(f"a source database {cause}; {remedy.replace('rebuild', rebuild)}")
    rebuild = f"{repair_command(source, user)} {REPAIR_DOES}"
    return SourceUnavailableError(f"the {source} database {cause}; {remedy.replace('rebuild', rebuild)}")


def _primary_name(exc: BaseException) -> str | None:
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    return _PRIMARY_NAMES.get(code & 0xFF) if isinstance(code, int) else None


_PRIMARY_NAMES = {3: "SQLITE_PERM", 5: "SQLITE_BUSY", 6: "SQLITE_LOCKED", 8: "SQLITE_READONLY",
                  10: "SQLITE_IOERR", 11: "SQLITE_CORRUPT", 13: "SQLITE_FULL", 14: "SQLITE_CANTOPEN",
                  26: "SQLITE_NOTADB"}  # fmt: skip
