"""`knowledge-mcp migrate --to postgresql://…` of a user's SQLite data, then the same searches
through real MCP clients of two servers: the SQLite files and the migrated PostgreSQL store
answer the same top 10, in the same order, for 20 queries spread over the five sources.

The repo's fixtures are imported into SQLite for `mia` (not the default user), copied by the
real CLI in its own process, once for the module.
"""

from __future__ import annotations

import json
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
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.registry import SOURCE_NAMES
from tests.conftest import FIXTURES, ROOT, call, import_into, store_settings
from tests.postgres import fresh_database

pytestmark = pytest.mark.anyio

USER = "mia"
QUERIES = [
    ("notes", "sourdough levain"),
    ("notes", "meeting notes project"),
    ("notes", "python*"),
    ("notes", '"home server" backup'),
    ("media", "invoice payment"),
    ("media", "harbour master"),
    ("media", "solar panel*"),
    ("media", "pasta OR palermo OR email"),
    ("chats", "python error"),
    ("chats", "character* story"),
    ("chats", "mirelle"),
    ("chats", "harbour OR kestrel"),
    ("characters", "captain ship"),
    ("characters", "librar*"),
    ("characters", "nova OR isles"),
    ("characters", "the"),
    ("prompts", "review code"),
    ("prompts", "summar*"),
    ("prompts", '"you are"'),
    ("prompts", "sql explain"),
]
"""(the source whose fixtures the query is about, the query): knowledge_search searches them all."""


@dataclass(frozen=True)
class Migrated:
    data_dir: Path
    url: str
    report: dict[str, Any]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def cli_migrate(data_dir: Path, url: str) -> dict[str, Any]:
    """`knowledge-mcp migrate --to <url> --user mia --json`, in its own process."""
    command = [sys.executable, "-m", "knowledge_mcp", "migrate", "--to", url, "--user", USER]
    command += ["--data-dir", str(data_dir), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert url not in done.stdout + done.stderr  # the url is a secret
    return dict(json.loads(done.stdout))


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory, pg_server: str) -> Iterator[Migrated]:
    data_dir = tmp_path_factory.mktemp("migrate") / "data"
    for name in SOURCE_NAMES:
        summary = anyio.run(lambda n=name: import_into(data_dir, n, FIXTURES / n, user=USER))
        assert summary.added > 0 and summary.files_failed == 0, (name, summary.failures)
    with fresh_database(pg_server) as url:
        yield Migrated(data_dir, url, cli_migrate(data_dir, url))


@pytest.fixture(scope="module")
async def servers(migrated: Migrated) -> AsyncIterator[dict[str, Any]]:
    """A real server per store over mia's data, in memory."""
    hosts, made = [], {}
    for store in ("sqlite", "postgresql"):
        settings = Settings(data_dir=migrated.data_dir, user=USER, **store_settings(store, migrated.url))
        made[store], host = build_server(settings)
        hosts.append(host)
    try:
        yield made
    finally:
        for host in hosts:
            await host.close()


def test_migrate_copied_and_verified_every_source(migrated: Migrated) -> None:
    assert migrated.report["verified"] is True
    reports = {r["source"]: r for r in migrated.report["sources"]}
    assert set(reports) == set(SOURCE_NAMES)
    for name, r in reports.items():
        assert r["sqlite"] == r["postgres"] and r["same_top10"] == r["searches"] > 0, (name, r)


def top10(page: dict[str, Any]) -> list[str]:
    return [str(h["uri"]) for h in page["results"]]


@pytest.mark.parametrize(("source", "query"), QUERIES, ids=[f"{s}:{q}" for s, q in QUERIES])
async def test_migrated_data_answers_the_same_top_10_as_sqlite(
    servers: dict[str, Any], source: str, query: str
) -> None:
    async with Client(servers["sqlite"]) as lite, Client(servers["postgresql"]) as pg:
        for tool, args in (
            ("knowledge_search", {"query": query, "limit": 10, "seen": "show"}),
            (f"{source}_search", {"query": query, "limit": 10}),
        ):
            theirs, ours = await call(lite, tool, **args), await call(pg, tool, **args)
            assert top10(theirs), (tool, query)  # every query finds something in its source
            assert top10(ours) == top10(theirs), (tool, query)


def test_the_queries_cover_every_source_four_times() -> None:
    assert sorted(s for s, _ in QUERIES) == sorted(SOURCE_NAMES * 4)
