"""Shared test fixtures: a throw-away data dir, imports into it, and a real in-memory MCP client."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.cli.commands import run_import
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.registry import SOURCE_NAMES, get_source
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer, ImportSummary

from .pgvector_probe import report_line
from .postgres import fresh_database, pg_server, pg_url  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

# The servers tests start (subprocesses inherit this) embed nothing in the background unless a
# test asks: their results would otherwise turn from lexical to hybrid mid-test. The worker is
# tested in tests/server/test_background_embedding.py.
os.environ.setdefault("KNOWLEDGE_MCP_EMBED_IN_BACKGROUND", "false")
# Nor do they load the model in the background: their first semantic search waits for it, as
# before, instead of answering lexically while it loads (tests/server/test_model_loading.py).
os.environ.setdefault("KNOWLEDGE_MCP_LOAD_MODEL_IN_BACKGROUND", "false")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line saying whether the PostgreSQL vector tests ran with pgvector, and why."""
    line = report_line()
    if line is not None:
        terminalreporter.write_line(line)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


async def import_into(
    data_dir: Path, source: str, *paths: Path, user: str = "local", prune: bool = False
) -> ImportSummary:
    """Import files for `user` through the same runner the CLI uses."""
    src = get_source(source)
    db = await open_database(database_path(data_dir, user, source), src.migrations)
    try:
        return await Importer(src, db).run(list(paths), prune=prune)
    finally:
        await db.close()


STORES = ("sqlite", "postgresql")
"""The item stores a server can read: the per-user SQLite files, or PostgreSQL (`item_store`)."""


async def import_into_store(
    store: str, url: str | None, data_dir: Path, source: str, *paths: Path, user: str = "local"
) -> ImportSummary:
    """Import files for `user` into `store` through the runner `knowledge-mcp import` uses for it
    (the PostgreSQL store at `url`)."""
    if store == "sqlite":
        return await import_into(data_dir, source, *paths, user=user)
    assert url is not None, "the PostgreSQL store needs a database url"
    settings = Settings(data_dir=data_dir, user=user, item_store="postgresql", database_url=url)
    return await run_import(settings, source, list(paths), False)


def store_settings(store: str, url: str | None) -> dict[str, Any]:
    """The settings that make a server read its items from `store` (PostgreSQL's at `url`)."""
    if store == "sqlite":
        return {"item_store": "sqlite"}
    return {"item_store": "postgresql", "database_url": url}


def store_env(store: str, url: str | None) -> dict[str, str]:
    """The same, as the environment of a `serve` subprocess."""
    return {f"KNOWLEDGE_MCP_{k.upper()}": str(v) for k, v in store_settings(store, url).items()}


@dataclass(frozen=True)
class PgFixtures:
    """Every source's fixture folder imported for `local` into the PostgreSQL database at `url`
    (`data_dir` holds no items: a server reading them needs it for its other files)."""

    data_dir: Path
    url: str


@pytest.fixture(scope="session")
def pg_fixtures(
    pg_server: str,  # noqa: F811  (the fixture)
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PgFixtures]:
    """The repo's fixtures in PostgreSQL, imported once per run; the tests only read them."""
    data_dir = tmp_path_factory.mktemp("pg-fixtures") / "data"
    with fresh_database(pg_server) as url:
        for name in SOURCE_NAMES:
            summary = anyio.run(import_into_store, "postgresql", url, data_dir, name, FIXTURES / name)
            assert summary.added > 0 and summary.files_failed == 0, (name, summary.failures)
        yield PgFixtures(data_dir, url)


@pytest.fixture
async def client_factory(data_dir: Path) -> AsyncIterator[Any]:
    """Start a real server (in memory) over `data_dir`; yields a function making clients."""
    hosts = []

    def make(**settings: Any) -> Client:
        mcp, host = build_server(Settings(data_dir=data_dir, **settings))
        hosts.append(host)
        return Client(mcp)

    yield make
    for host in hosts:
        await host.pool.close()


async def call(client: Any, tool: str, **args: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured content."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return dict(result.structured_content)


def cli_import(source: str, folder: Path, data_dir: Path) -> None:
    """`knowledge-mcp import <source> <folder>` through the real CLI, in its own process."""
    command = [
        sys.executable,
        "-m",
        "knowledge_mcp",
        "import",
        source,
        str(folder),
        "--data-dir",
        str(data_dir),
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=120, cwd=ROOT)


def serve_args(data_dir: Path) -> list[str]:
    """The arguments after the Python executable that serve `data_dir` over stdio."""
    return ["-m", "knowledge_mcp", "serve", "--transport", "stdio", "--data-dir", str(data_dir)]


def item_id(hit: dict[str, Any]) -> str:
    """A result's item id: the tail of its uri (`notes://<id>`), which is all the wire keeps."""
    return str(hit["uri"]).split("://", 1)[1]


def score_types(page: dict[str, Any]) -> list[str]:
    """Each hit's score type as the wire says it: on the hit, else once on the page when every
    hit shares it, else the default (fts)."""
    return [str(hit.get("score_type") or page.get("score_type") or "fts") for hit in page["results"]]


def source_of(hit: dict[str, Any]) -> str:
    """A search hit's source: the scheme of its uri (`notes://<id>`)."""
    return str(hit["uri"]).split("://", 1)[0]


async def error(client: Any, tool: str, **args: Any) -> str:
    """Call a tool that must fail; its error text."""
    result = await client.call_tool(tool, args)
    assert result.is_error
    return str(result.content[0].text)


@pytest.fixture(scope="session", autouse=True)
def _only_the_installed_namespace() -> Iterator[None]:
    """The code is imported as `knowledge_mcp.*` only: a test that reached a bare `server` or
    `sources` (importable from the repository root) would patch a second copy of a module."""
    yield
    bare = sorted(m for m in ("server", "sources", "aggregator", "bench") if m in sys.modules)
    assert not bare, f"imported outside the knowledge_mcp namespace: {bare}"
