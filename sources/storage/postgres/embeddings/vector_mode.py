"""Which vectors a PostgreSQL store ranks with — pgvector's or exact ones — and the switch to
exact vectors when pgvector kills the server.

pgvector compiles with `-march=native` unless told otherwise: a copy built on a CPU with AVX-512
dies with an illegal instruction on one without (its distances, norms and the HNSW index's
inserts), and PostgreSQL then restarts every backend of the cluster. Its text input and output
use no such instructions, so the vectors stay readable.

A vector statement (`guarded`) that ends with the server connection lost is taken for that
crash: the store stops using pgvector for the database — its HNSW index is dropped, so no write
or plan reaches pgvector's distance code again, and the vectors are read as text and ranked
exactly (`vectors._exact`), as without the extension — logs one ERROR naming the cause and the
fix, and raises `SourceUnavailableError` for that call: the statement is never run again, and the
next search answers once the server has recovered (the pool's connections the restart cut are
dropped). The missing index is the state other workers and later starts read (`has_pgvector`), and
`knowledge-mcp doctor` reports (`column_state`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

import psycopg
from loguru import logger

from ....errors import SourceUnavailableError
from ..pool import PgDatabase

KIND_SQL = """SELECT format_type(atttypid, atttypmod) AS kind,
        to_regclass('pg_chunk_vectors_hnsw') IS NOT NULL AS indexed
    FROM pg_attribute WHERE attrelid = to_regclass('pg_chunk_vectors') AND attname = 'embedding'"""
DROP_INDEX_SQL = "DROP INDEX IF EXISTS pg_chunk_vectors_hnsw"
CREATE_INDEX = (
    "CREATE INDEX pg_chunk_vectors_hnsw ON pg_chunk_vectors USING hnsw (embedding vector_cosine_ops)"
)
COLUMN_KEY = "pg_vector_column"
CRASH_KEY = "pg_vector_crash"
FIX = (
    "install a pgvector built on this CPU (or with portable flags: make OPTFLAGS=''), restart "
    f"PostgreSQL, then run {CREATE_INDEX}"
)
CRASHED = (
    "pgvector killed the PostgreSQL server's backend on {database} ({error}): the server's pgvector "
    "was most likely built for another CPU (-march=native, e.g. AVX-512 instructions this CPU lacks). "
    "Its vectors are ranked exactly from now on (pgvector's HNSW index dropped). Fix: {fix}"
)
CRASHED_NOW = (
    "semantic search stopped: the PostgreSQL server lost its connection during a pgvector statement "
    "(likely a pgvector built for another CPU); vectors are ranked exactly from the next search on"
)
NOT_DROPPED = "vectors are not written: pgvector's HNSW index could not be dropped after its crash ({error})"

Mode = Literal["pgvector", "exact"]


@dataclass(frozen=True)
class VectorColumn:
    """`pg_chunk_vectors.embedding`'s type (`vector(384)`, `real[]`, or "" before the
    migration) and whether pgvector's HNSW index is on it."""

    kind: str
    indexed: bool

    @property
    def pgvector(self) -> bool:
        return self.kind.startswith("vector")


@dataclass(frozen=True)
class Crash:
    """A vector statement that lost the server connection in this process."""

    at: str
    error: str
    index_dropped: bool = False
    drop_error: str = ""


@dataclass(frozen=True)
class VectorState:
    """What `doctor` reports: the mode a database's vectors are ranked in, and why."""

    mode: Mode
    reason: str


async def column(db: PgDatabase) -> VectorColumn:
    """The vector column's type and index (read once per database handle)."""
    known = db.caches.get(COLUMN_KEY)
    if not isinstance(known, VectorColumn):
        row = await db.fetchone(KIND_SQL)
        known = VectorColumn(str(row["kind"]), bool(row["indexed"])) if row else VectorColumn("", False)
        db.caches[COLUMN_KEY] = known
    return known


async def has_pgvector(db: PgDatabase) -> bool:
    """Whether searches use pgvector's operators and index (else the vectors, `vector` or
    `real[]`, are read and ranked exactly here)."""
    found = await column(db)
    return found.pgvector and found.indexed and CRASH_KEY not in db.caches


def connection_lost(exc: BaseException) -> bool:
    """Whether a statement's error is its server connection ending (a crashed or terminated
    backend, a closed socket), not an error the server reported and survived."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state.startswith(("08", "57P"))


@asynccontextmanager
async def guarded(db: PgDatabase, *, pgvector: bool = True) -> AsyncIterator[None]:
    """Around one statement that runs pgvector's code (`pgvector`: a write is one only under the
    HNSW index): a lost connection switches the database to exact vectors (`switch_to_exact`) and
    ends the call with `SourceUnavailableError`."""
    try:
        yield
    except psycopg.OperationalError as exc:
        if not pgvector or not connection_lost(exc):
            raise
        await switch_to_exact(db, exc)
        raise SourceUnavailableError(CRASHED_NOW) from None


async def switch_to_exact(db: PgDatabase, exc: BaseException) -> None:
    """Stop using pgvector on `db`: one ERROR, the cut connections dropped, the index dropped."""
    if CRASH_KEY in db.caches:  # another statement of this process switched already
        return
    error = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    db.caches[CRASH_KEY] = Crash(datetime.now(UTC).isoformat(timespec="seconds"), error)
    logger.error(CRASHED.format(database=db.name, error=error, fix=FIX))
    await db.pool.check()
    await drop_index(db)


async def drop_index(db: PgDatabase) -> bool:
    """After a crash: drop pgvector's HNSW index if it is still there (a write through it would
    run pgvector's distance code); whether it is gone."""
    crash = db.caches.get(CRASH_KEY)
    if not isinstance(crash, Crash) or crash.index_dropped:
        return True
    try:
        await db.write(DROP_INDEX_SQL)
    except psycopg.Error as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        db.caches[CRASH_KEY] = replace(crash, drop_error=reason)
        logger.warning("pgvector's HNSW index was not dropped yet: {}", reason)
        return False
    db.caches[CRASH_KEY] = replace(crash, index_dropped=True, drop_error="")
    db.caches[COLUMN_KEY] = replace(await column(db), indexed=False)
    return True


async def writable(db: PgDatabase) -> None:
    """Before writing vectors: after a crash, only once the HNSW index is gone."""
    if CRASH_KEY in db.caches and not await drop_index(db):
        crash = db.caches[CRASH_KEY]
        raise SourceUnavailableError(NOT_DROPPED.format(error=crash.drop_error))


def column_state(found: VectorColumn) -> VectorState:
    """The state a vector column (`KIND_SQL`'s row) says, when no crash was seen in this process."""
    if not found.kind:
        return VectorState("exact", "no vectors yet: the store's schema is not migrated")
    if not found.pgvector:
        return VectorState(
            "exact",
            "exact vectors (real[]): pgvector was not created in this database (not installed on "
            "the server, or this role may not create it; an admin can run CREATE EXTENSION vector "
            "before the store's first start)",
        )
    if not found.indexed:
        return VectorState(
            "exact",
            "exact vectors: pgvector's HNSW index is missing (dropped after a pgvector statement "
            f"crashed the server, most likely a pgvector built for another CPU). Fix: {FIX}",
        )
    return VectorState("pgvector", "pgvector with its HNSW index (cosine)")
