"""A pgvector statement that kills the server's backends: the store switches to exact vectors
with one ERROR, never runs that statement again, and the next search answers.

The crash is real, on a real server: in the test database the `<=>` operator (found before
pgvector's on the search path) is a SQL function that terminates every backend of the database,
its own last — the connection ends mid-statement as with pgvector's illegal instruction. So that
no pgvector distance code runs on any CPU, the HNSW index is a stand-in of the same name.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlsplit

import numpy as np
import psycopg
import pytest
from loguru import logger

from knowledge_mcp.sources.errors import SourceUnavailableError
from knowledge_mcp.sources.storage.postgres.embeddings.vector_mode import (
    column,
    column_state,
    connection_lost,
    has_pgvector,
)
from knowledge_mcp.sources.storage.postgres.embeddings.vectors import cosines, nearest
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, open_pg
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, DIM, MIGRATIONS
from tests.pgvector_probe import allow_pgvector

from .vector_writes import write_vectors

pytestmark = pytest.mark.anyio

STAND_IN_SQL = """DROP INDEX pg_chunk_vectors_hnsw;
CREATE INDEX pg_chunk_vectors_hnsw ON pg_chunk_vectors (source)"""
CRASH_SQL = """
CREATE SCHEMA crash;
CREATE SEQUENCE crash.calls;
CREATE FUNCTION crash.distance(a vector, b vector) RETURNS double precision LANGUAGE plpgsql AS $$
BEGIN
    PERFORM nextval('crash.calls');
    PERFORM pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid();
    PERFORM pg_terminate_backend(pg_backend_pid());
    PERFORM pg_sleep(30);
    RETURN 0;
END $$;
CREATE OPERATOR crash.<=> (LEFTARG = vector, RIGHTARG = vector, FUNCTION = crash.distance);
"""
"""`<=>` that ends every connection to the database; `crash.calls` counts its runs (a sequence
is not rolled back with the statement)."""
INDEX_SQL = "SELECT to_regclass('public.pg_chunk_vectors_hnsw') IS NOT NULL"


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def errors() -> Iterator[list[str]]:
    seen: list[str] = []
    sink = logger.add(lambda m: seen.append(str(m)), level="ERROR", format="{message}")
    try:
        yield seen
    finally:
        logger.remove(sink)


@pytest.fixture
async def crashing(pg_url: str) -> AsyncIterator[tuple[PgDatabase, np.ndarray]]:
    """A store with pgvector and alice's 30 items' vectors whose `<=>` kills the server's
    backends; and those vectors."""
    with psycopg.connect(pg_url, autocommit=True) as admin:
        allow_pgvector(admin)
        admin.execute("CREATE EXTENSION vector")
    vectors = unit(np.random.default_rng(3), 30)
    db = await open_pg(pg_url)
    try:
        await migrate(db, COMPONENT, MIGRATIONS)
        await db.write(STAND_IN_SQL)
        for n in range(30):
            await write_vectors(db, "alice", "notes", chunk=100 + n, item=n, windows=vectors[n : n + 1])
    finally:
        await db.close()
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(CRASH_SQL)  # type: ignore[arg-type]  # our own literal SQL
        name = urlsplit(pg_url).path.strip("/")
        admin.execute(f"ALTER DATABASE {name} SET search_path = crash, public")  # type: ignore[arg-type]
    db = await open_pg(pg_url, min_size=3)
    try:
        yield db, vectors
    finally:
        await db.close()


async def test_a_search_that_kills_the_server_switches_the_store_to_exact_vectors_with_one_error(
    crashing: tuple[PgDatabase, np.ndarray], errors: list[str], pg_url: str
) -> None:
    db, vectors = crashing
    assert await has_pgvector(db)
    query = vectors[7]
    with pytest.raises(SourceUnavailableError, match="ranked exactly from the next search on"):
        await nearest(db, "alice", "notes", query, 5)
    found = await nearest(db, "alice", "notes", query, 5)  # the next search answers, exactly
    assert [n.item for n in found] == [int(i) for i in np.argsort(-(vectors @ query))[:5]]
    assert found[0].cosine == pytest.approx(1.0, abs=1e-5)
    assert [n.item for n in await cosines(db, "alice", "notes", query, [3, 7])] == [7, 3]
    assert len(errors) == 1
    assert "another CPU" in errors[0] and "OPTFLAGS=''" in errors[0] and "CREATE INDEX" in errors[0]
    state = column_state(await column(db))
    assert (state.mode, await has_pgvector(db)) == ("exact", False)
    assert "HNSW index is missing" in state.reason
    with psycopg.connect(pg_url, autocommit=True) as admin:
        assert admin.execute("SELECT last_value FROM crash.calls").fetchone() == (1,)  # never run again
        assert admin.execute(INDEX_SQL).fetchone() == (False,)  # no write reaches pgvector's index


async def test_after_the_switch_vectors_are_written_and_a_new_worker_ranks_exactly_too(
    crashing: tuple[PgDatabase, np.ndarray], errors: list[str], pg_url: str
) -> None:
    db, vectors = crashing
    with pytest.raises(SourceUnavailableError):
        await cosines(db, "alice", "notes", vectors[0], [0, 1])
    extra = unit(np.random.default_rng(4), 1)
    await write_vectors(db, "alice", "notes", chunk=500, item=99, windows=extra)
    other = await open_pg(pg_url)  # another worker, or the next start: the missing index tells it
    try:
        assert not await has_pgvector(other)
        assert [n.item for n in await nearest(other, "alice", "notes", extra[0], 1)] == [99]
        state = column_state(await column(other))
        assert state.mode == "exact" and "HNSW index is missing" in state.reason
    finally:
        await other.close()
    assert len(errors) == 1


@pytest.mark.parametrize(
    ("error", "lost"),
    [
        (psycopg.OperationalError("server closed the connection unexpectedly"), True),
        (psycopg.errors.AdminShutdown("terminating connection due to administrator command"), True),
        (psycopg.errors.CrashShutdown("terminating connection because of crash of another process"), True),
        (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"), False),
        (psycopg.errors.LockNotAvailable("could not obtain lock"), False),
        (psycopg.errors.UndefinedTable("relation does not exist"), False),
    ],
)
def test_only_an_ended_connection_counts_as_pgvector_killing_the_server(error: Exception, lost: bool) -> None:
    assert connection_lost(error) is lost
