"""The run's pgvector probe (tests/pgvector_probe.py): a backend that dies in it means exact
vectors, the override runs the vector tests on exact vectors on any CPU, and the report says so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.pgvector_probe import ENV, allow_pgvector, choose, probe
from tests.postgres import ENV_URL

ROOT = Path(__file__).parents[4]
DIES_SQL = """
CREATE FUNCTION die() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_terminate_backend(pg_backend_pid());
    PERFORM pg_sleep(30);
END $$;
CREATE EVENT TRIGGER die ON ddl_command_start WHEN TAG IN ('CREATE EXTENSION') EXECUTE FUNCTION die();
"""
"""A database whose backend dies on the probe's first statement, before any pgvector code runs
(as pgvector's own would die on a CPU it was not built for)."""


class Handle:
    def __init__(self) -> None:
        self.stopped = False

    def cleanup(self) -> None:
        self.stopped = True


@pytest.fixture
def dying_url(pg_url: str) -> str:
    with psycopg.connect(pg_url, autocommit=True) as admin:
        allow_pgvector(admin)
        admin.execute(DIES_SQL)  # type: ignore[arg-type]  # our own literal SQL
    return pg_url


def test_a_probe_whose_backend_dies_means_exact_vectors_and_stops_its_server(dying_url: str) -> None:
    handle = Handle()

    def start(folder: Path) -> tuple[str, Any]:
        return dying_url, handle

    assert probe(dying_url) is not None
    verdict = choose("probe", start)
    assert not verdict.pgvector and handle.stopped
    assert "exact vectors" in verdict.line() and "another CPU" in verdict.why


def test_an_unknown_setting_fails_the_run_naming_the_variable() -> None:
    with pytest.raises(pytest.fail.Exception, match=f"{ENV} must be one of probe, pgvector, exact"):
        choose("avx2", None)


def test_the_exact_setting_runs_the_vector_tests_on_exact_vectors_and_says_so(pg_server: str) -> None:
    env = {**os.environ, ENV: "exact", ENV_URL: pg_server}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command.append("tests/sources/storage/postgres/test_vectors.py")
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:]
    said = [line for line in done.stdout.splitlines() if line.startswith("PostgreSQL vector tests")]
    why = f"{ENV}=exact (as if pgvector had crashed the probe)"
    assert said == [f"PostgreSQL vector tests ran with exact vectors (pgvector left out): {why}"]
