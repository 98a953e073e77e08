"""Versioned PostgreSQL migrations, one ordered list per component (as SQLite's per source).

Each component (`sessions`, `keys`, `limits`, `items`…) records its version in one table,
`knowledge_schema`. Every migration runs in its own transaction under an advisory lock, so
several workers starting at once apply each migration exactly once; a database newer than the
code is refused, as `storage.db.migrate` refuses a newer SQLite file. A migration's own
`RAISE WARNING` is logged as a warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loguru import logger

from ...errors import SchemaVersionError
from .pool import PgDatabase

SCHEMA_TABLE_SQL = """
CREATE TABLE IF NOT EXISTS knowledge_schema (
    component text PRIMARY KEY,
    version integer NOT NULL
)
"""
LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtext('knowledge_schema'), hashtext(%s))"
VERSION_SQL = "SELECT version FROM knowledge_schema WHERE component = %s"
RECORD_SQL = """
INSERT INTO knowledge_schema (component, version) VALUES (%s, %s)
ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version
"""


@dataclass(frozen=True)
class PgMigration:
    version: int
    name: str
    sql: str


async def migrate(db: PgDatabase, component: str, migrations: Sequence[PgMigration]) -> int:
    """Apply `component`'s pending migrations in order; its version afterwards."""
    latest = max((m.version for m in migrations), default=0)
    async with db.transaction() as conn:
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('knowledge_schema'))")
        await conn.execute(SCHEMA_TABLE_SQL)
    current = 0
    for migration in sorted(migrations, key=lambda m: m.version):
        async with db.transaction() as conn:
            await conn.execute(LOCK_SQL, (component,))
            row = await (await conn.execute(VERSION_SQL, (component,))).fetchone()
            current = int(row[0]) if row else 0
            if current > latest:
                raise SchemaVersionError(
                    f"the PostgreSQL {component} schema is at version {current}, newer than this "
                    f"knowledge-mcp supports ({latest}); upgrade knowledge-mcp"
                )
            if migration.version <= current:
                continue
            conn.add_notice_handler(_log_warning)
            try:
                await conn.execute(migration.sql)  # type: ignore[arg-type]  # our own literal SQL
            finally:
                conn.remove_notice_handler(_log_warning)
            await conn.execute(RECORD_SQL, (component, migration.version))
            current = migration.version
    return current


def _log_warning(notice: Any) -> None:
    """A migration's own `RAISE WARNING` (e.g. pgvector refused to this role), logged once as it
    runs once; notices below WARNING are PostgreSQL's chatter (`IF NOT EXISTS` skips)."""
    if notice.severity_nonlocalized == "WARNING":
        logger.warning("PostgreSQL migration: {}", notice.message_primary)
