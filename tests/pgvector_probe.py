"""Whether the run's PostgreSQL vector tests use pgvector or the store's exact vectors.

pgvector compiled for another CPU (AVX-512 on one without) answers `CREATE EXTENSION vector`
and then dies on its first distance, norm or HNSW insert, and the crash restarts every backend
of the cluster. So once per run (`decide`, from `postgres.pg_server`) a throw-away server runs
those statements (`PROBE_SQL`): a backend that dies means "not on this CPU", and every test
database then refuses `CREATE EXTENSION vector` (`refuse_pgvector`), so the store migrates to
its `real[]` column and ranks exactly, as for a role that may not create the extension. The
terminal summary names the mode and why (`report_line`). Never a skip.

`KNOWLEDGE_MCP_TEST_PGVECTOR` overrides the probe: `exact` runs as if pgvector had crashed (so
the exact path is tested on any CPU), `pgvector` uses it unprobed, `probe` is the default.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

ENV = "KNOWLEDGE_MCP_TEST_PGVECTOR"
SETTINGS = ("probe", "pgvector", "exact")
_VECTOR = "('[' || array_to_string(array_fill({x}::real, ARRAY[384]), ',') || ']')::vector"
PROBE_SQL = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    "CREATE TABLE probe (v vector(384))",
    "CREATE INDEX ON probe USING hnsw (v vector_cosine_ops)",
    f"INSERT INTO probe SELECT {_VECTOR.format(x='g')} FROM generate_series(1, 3) AS g",
    f"SELECT v <=> {_VECTOR.format(x=1)} FROM probe ORDER BY v <=> {_VECTOR.format(x=1)} LIMIT 2",
    "SET enable_indexscan = off",
    f"SELECT v <=> {_VECTOR.format(x=1)} FROM probe ORDER BY v <=> {_VECTOR.format(x=1)} LIMIT 2",
)
"""pgvector's input, an HNSW index insert (a norm), a distance through the index and by a scan."""
REFUSE_SQL = """
CREATE FUNCTION refuse_pgvector() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'pgvector is left out of the test databases (see tests/pgvector_probe.py)'
        USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE EVENT TRIGGER refuse_pgvector ON ddl_command_start WHEN TAG IN ('CREATE EXTENSION')
    EXECUTE FUNCTION refuse_pgvector();
"""
"""A database where `CREATE EXTENSION` is refused as to a role without the privilege (the
store's migration then makes `real[]` vectors, with its one warning)."""
ALLOW_SQL = "DROP EVENT TRIGGER IF EXISTS refuse_pgvector"


@dataclass(frozen=True)
class Verdict:
    """The run's vector mode, and why."""

    pgvector: bool
    why: str

    def line(self) -> str:
        mode = "pgvector" if self.pgvector else "exact vectors (pgvector left out)"
        return f"PostgreSQL vector tests ran with {mode}: {self.why}"


_decided: list[Verdict] = []


def decide(start: Callable[[Path], tuple[str, Any]] | None) -> Verdict:
    """The run's verdict, decided on the first call: `start` starts a server in a folder (None:
    the tests use a server of their own, which is not probed)."""
    if not _decided:
        _decided.append(choose(os.environ.get(ENV, "probe"), start))
    return _decided[0]


def choose(setting: str, start: Callable[[Path], tuple[str, Any]] | None) -> Verdict:
    if setting not in SETTINGS:
        pytest.fail(f"{ENV} must be one of {', '.join(SETTINGS)}, not {setting!r}")
    if setting == "exact":
        return Verdict(False, f"{ENV}=exact (as if pgvector had crashed the probe)")
    if setting == "pgvector":
        return Verdict(True, f"{ENV}=pgvector (not probed)")
    if start is None:
        outside = "the server of KNOWLEDGE_MCP_TEST_DATABASE_URL"
        return Verdict(True, f"{outside}, not probed ({ENV}=exact leaves pgvector out)")
    started = time.perf_counter()
    crashed = probe_server(start)
    took = f"{time.perf_counter() - started:.1f} s"
    if crashed is None:
        return Verdict(True, f"its distances and HNSW index ran in the probe server ({took})")
    lost = f"the probe's pgvector statement lost its server ({crashed})"
    return Verdict(False, f"{lost}: a pgvector built for another CPU ({took})")


def probe_server(start: Callable[[Path], tuple[str, Any]]) -> str | None:
    """Run `PROBE_SQL` in a throw-away server: None when pgvector ran, else the error that ended it."""
    url, server = start(Path(f"/tmp/kmcp-probe-{os.getpid()}"))  # a short path: the socket's
    try:
        return probe(url)
    finally:
        server.cleanup()


def probe(url: str) -> str | None:
    """Run `PROBE_SQL` in the database at `url`: None when it ran, else why the connection ended."""
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            for sql in PROBE_SQL:
                conn.execute(sql)  # type: ignore[arg-type]  # our own literal SQL
    except psycopg.OperationalError as exc:
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return None


def pgvector_in_use() -> bool:
    """Whether the run's test databases may create pgvector (True before the verdict)."""
    return _decided[0].pgvector if _decided else True


def report_line() -> str | None:
    """The terminal summary's line, once the run has used PostgreSQL."""
    return _decided[0].line() if _decided else None


def refuse_pgvector(url: str) -> None:
    """Make the database at `url` refuse `CREATE EXTENSION` (exact vectors)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(REFUSE_SQL)  # type: ignore[arg-type]  # our own literal SQL


def allow_pgvector(conn: psycopg.Connection[Any]) -> None:
    """Undo `refuse_pgvector` on the database of `conn` (a test that creates pgvector itself and
    runs none of its distance code)."""
    conn.execute(ALLOW_SQL)
