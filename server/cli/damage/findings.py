"""What `doctor` reports about damage: SQLite's full `integrity_check` over every user's every
source database, one finding (source, user, problem, remedy) per damaged one."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from knowledge_mcp.sources.registry import SOURCE_NAMES
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


@dataclass(frozen=True)
class IntegrityFinding:
    """One damaged source database, for `doctor`: whose, what is wrong, what to run."""

    source: str
    user: str
    problem: str
    remedy: str


def find_damage(data_dir: Path) -> list[IntegrityFinding]:
    """Run SQLite's full `integrity_check` over every user's every source database under
    `data_dir`: one finding per damaged one (none: the store is clean). Synchronous and as slow
    as the check (it reads every page): for `doctor`, not for a request."""
    findings = []
    users = data_dir / "users"
    for home in sorted(p for p in users.iterdir() if p.is_dir()) if users.is_dir() else ():
        user = user_of_folder(home.name) or home.name
        for source in SOURCE_NAMES:
            path = home / f"{source}.db"
            if integrity.stamp(path) is None:
                continue
            problem = damage_of(path)
            if problem is not None:
                remedy = repair_command(source, user).removeprefix("run ")
                findings.append(IntegrityFinding(source, user, problem, f"{remedy} {REPAIR_DOES}"))
    return findings


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
