"""Planning against execution time of the statements a ranking runs (EXPLAIN ANALYZE).

`Explaining` stands in for a `PgDatabase`: each read statement a ranking sends through one of
its transactions (SELECT or WITH) is first run as `EXPLAIN (ANALYZE, FORMAT JSON)` with the same
parameters, and the server's own "Planning Time" and "Execution Time" are added to a `Tally`;
then the statement itself runs, so the caller sees what it always sees. The statements run
twice, so time the ranking on the plain database and use this pass for the split alone. With
thousands of partitions the planner's work (pruning a partitioned table to one user's
partition, opening its relations) is what grows, not the execution.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import psycopg

from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, Result, Statement

READS = ("SELECT", "WITH")


@dataclass
class Tally:
    planning_ms: float = 0.0
    execution_ms: float = 0.0
    statements: int = 0

    def add(self, plan: dict[str, Any]) -> None:
        """One statement's EXPLAIN (FORMAT JSON) entry."""
        self.planning_ms += float(plan.get("Planning Time", 0.0))
        self.execution_ms += float(plan.get("Execution Time", 0.0))
        self.statements += 1


def is_read(sql: Any) -> bool:
    """A statement EXPLAIN ANALYZE may run a second time: a plain SELECT or WITH text."""
    return isinstance(sql, str) and sql.lstrip().upper().startswith(READS)


class _Connection:
    def __init__(self, conn: Any, tally: Tally) -> None:
        self._conn = conn
        self._tally = tally

    async def execute(self, sql: Any, params: Any = None) -> Any:
        if is_read(sql):
            explained = await self._conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
            row = await explained.fetchone()
            self._tally.add(row[0][0])
        return await self._conn.execute(sql, params)


class Explaining:
    """A `PgDatabase` whose transactions tally their reads' planning and execution time."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db
        self.tally = Tally()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Any]:
        async with self.db.transaction() as conn:
            yield _Connection(conn, self.tally)

    async def send(self, conn: Any, statements: Sequence[Statement]) -> list[Result]:
        """The statements one by one (each read explained first), with the results `send` gives."""
        results: list[Result] = []
        for sql, params in statements:
            if is_read(sql):
                cursor = psycopg.AsyncClientCursor(conn)
                await cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {cursor.mogrify(sql, params)}")  # type: ignore[arg-type]
                row = await cursor.fetchone()
                self.tally.add(row[0][0])  # type: ignore[index]
            results += await self.db.send(conn, [(sql, params)])
        return results
