"""What `doctor` and `repair` find about damage: SQLite's full `integrity_check` of a source
database, and `doctor`'s finding (the file, the damage, the `repair` to run) for a damaged one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from knowledge_mcp.sources.storage.damage import integrity
from knowledge_mcp.sources.storage.damage.failures import REPAIR_DOES, repair_command
from knowledge_mcp.sources.storage.users import user_of_folder

from ..doctor.findings import Finding


def damage_of(path: Path) -> str | None:
    """What is wrong with the database at `path` (recorded, or found by the full check), else None."""
    recorded = integrity.recorded_damage(path)
    if recorded is not None:
        return recorded
    try:
        findings = integrity.integrity_check(path)
    except (sqlite3.Error, OSError) as exc:  # not a SQLite file at all, unreadable
        return str(exc)
    return findings[0] if findings else None


def doctor_finding(conn: sqlite3.Connection, path: Path, source: str) -> Finding | None:
    """`doctor`'s check of one source database (`doctor.stores.DATABASE_CHECKS`): SQLite's full
    `integrity_check` on doctor's read-only connection; a FAIL naming the damage and `repair`."""
    problem = integrity.recorded_damage(path)
    if problem is None:
        rows = conn.execute(f"PRAGMA integrity_check({integrity.QUICK_CHECK_ERRORS})").fetchall()
        lines = [line for row in rows for line in str(row[0]).splitlines() if not line.startswith("***")]
        problem = None if lines == ["ok"] else lines[0]
    if problem is None:
        return None
    user = user_of_folder(path.parent.name) or path.parent.name
    fix = f"{repair_command(source, user)} {REPAIR_DOES}"
    return Finding(f"{source} db", f"{path}: damaged ({problem})", "fail", fix)
