"""Doctor: each user's source databases — items, chunks, vectors (embedding progress) — opened
read-only, never created or migrated.

`DATABASE_CHECKS` is where a per-database check goes (an integrity check, say): each is given
the open read-only connection, the file and the source, and returns a finding or None.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.db import source_failure

from ..damage.findings import doctor_finding
from .findings import Context, Finding

COUNTS_SQL = "SELECT (SELECT count(*) FROM {p}_items), (SELECT count(*) FROM {p}_chunks)"
VECTORS_SQL = "SELECT count(*) FROM {p}_chunk_vectors"
MAX_USERS = 10  # one screen: the rest are counted, not listed

DatabaseCheck = Callable[[sqlite3.Connection, Path, str], Finding | None]
DATABASE_CHECKS: tuple[DatabaseCheck, ...] = (doctor_finding,)
"""Per-database checks, run on every source database found (add yours here)."""


async def check_sources(ctx: Context) -> list[Finding]:
    """One line per user: each source's items and vectors; a FAIL line per unusable database."""
    settings = ctx.settings
    if settings is None or not ctx.users:
        return []
    if settings.item_store == "postgresql":
        return [
            Finding("items", "kept in PostgreSQL (item_store = postgresql); see the PostgreSQL line", "note")
        ]
    findings: list[Finding] = []
    unembedded = 0
    for user in ctx.users[:MAX_USERS]:
        tallies = [
            _database(path, name, user, max(m.version for m in source.migrations))
            for name, source in SOURCES.items()
            if (path := settings.data_dir / "users" / user / f"{name}.db").exists()
        ]
        parts = "; ".join(t.part for t in tallies) or "no source imported yet"
        findings.append(Finding(f"user {user}", parts))
        findings += [problem for t in tallies for problem in t.problems]
        unembedded += sum(t.unembedded for t in tallies)
    if unembedded:
        detail = "some chunks have no vectors yet: searches of those sources stay lexical until then"
        fix = "keep `knowledge-mcp serve` running (it embeds in the background), or run knowledge-mcp embed"
        findings.append(Finding("embedding", detail, "note", fix))
    if len(ctx.users) > MAX_USERS:
        findings.append(Finding("users", f"… and {len(ctx.users) - MAX_USERS} more not shown", "note"))
    return findings


@dataclass(frozen=True)
class Tally:
    part: str  # `notes 12 items (40 chunks, 75 % embedded: 30 of 40)`
    problems: list[Finding] = field(default_factory=list)
    unembedded: int = 0  # chunks still without vectors


def _database(path: Path, source: str, user: str, latest: int) -> Tally:
    """What one source database holds, and any problems of the file."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        return Tally(f"{source} unreadable", [_unusable(exc, path, source, user)])
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > latest:
            detail = f"{path} has schema {version}; this install knows up to {latest}"
            fix = "upgrade knowledge-mcp (the file was written by a newer version)"
            return Tally(f"{source} newer schema", [Finding(f"{source} db", detail, "fail", fix)])
        if version == 0:
            return Tally(f"{source} empty")
        items, chunks = conn.execute(COUNTS_SQL.format(p=source)).fetchone()
        embedded = min(chunks, _embedded(conn, source))
        progress = (
            "all embedded"
            if embedded == chunks
            else f"{embedded * 100 // chunks} % embedded: {embedded:,} of {chunks:,}"
        )
        found = [f for check in DATABASE_CHECKS if (f := check(conn, path, source)) is not None]
        return Tally(f"{source} {items} items ({chunks} chunks, {progress})", found, chunks - embedded)
    except sqlite3.Error as exc:
        return Tally(f"{source} unreadable", [_unusable(exc, path, source, user)])
    finally:
        conn.close()


def _embedded(conn: sqlite3.Connection, source: str) -> int:
    """How many chunks have their vectors (the ones semantic search needs)."""
    try:
        return int(conn.execute(VECTORS_SQL.format(p=source)).fetchone()[0])
    except sqlite3.OperationalError:  # a schema from before vectors: the server adds the table
        return 0


def _unusable(exc: sqlite3.Error, path: Path, source: str, user: str) -> Finding:
    failure = source_failure(exc, source, user)
    if failure is None:  # not a failure of the file: say what it was
        return Finding(f"{source} db", f"{path}: {type(exc).__name__}: {exc}", "fail", "check the file")
    cause, _, fix = str(failure).partition("; ")
    return Finding(f"{source} db", f"{path}: {cause.removeprefix('the ')}", "fail", fix or None)
