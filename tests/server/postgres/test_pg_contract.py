"""The contract every source keeps (tests/test_contract.py), on the PostgreSQL item store.

The same test functions, collected here a second time with this module's `world`: a server
reading the repo's fixtures from PostgreSQL (`pg_fixtures`, imported once per run). The SQLite
variant is tests/test_contract.py itself. Left out: re-importing the fixture folder (an import
test, not a reading one; PostgreSQL's is tests/sources/storage/postgres/test_writing.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.registry import SOURCE_NAMES
from tests import test_contract
from tests.conftest import FIXTURES, PgFixtures, store_settings

pytestmark = pytest.mark.anyio

LEFT_OUT = {"test_reimporting_the_fixture_folder_adds_and_updates_nothing"}

FIRST_ITEM_SQL = (
    "SELECT item_id, title FROM pg_items WHERE user_id = 'local' AND source = %s ORDER BY id LIMIT 1"
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def server(pg_fixtures: PgFixtures) -> AsyncIterator[Any]:
    settings = store_settings("postgresql", pg_fixtures.url)
    mcp, host = build_server(Settings(data_dir=pg_fixtures.data_dir, **settings))
    try:
        yield mcp
    finally:
        await host.close()


@pytest.fixture(params=sorted(SOURCE_NAMES))
async def world(request: pytest.FixtureRequest, pg_fixtures: PgFixtures, server: Any) -> Any:
    """test_contract's world over PostgreSQL: a client, the source's first item's id and title."""
    name = str(request.param)
    with psycopg.connect(pg_fixtures.url) as conn:
        row = conn.execute(FIRST_ITEM_SQL, (name,)).fetchone()
    assert row is not None, name
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        yield {
            "name": name,
            "client": client,
            "tools": tools,
            "folder": FIXTURES / name,
            "item_id": row[0],
            "title": row[1],
            "data_dir": pg_fixtures.data_dir,
        }


def test_every_contract_test_runs_here_but_the_import_one() -> None:
    names = {n for n in vars(test_contract) if n.startswith("test_")}
    missing = names - LEFT_OUT - set(globals())
    assert not missing, sorted(missing)
    assert names >= LEFT_OUT, "a left-out test was renamed: update LEFT_OUT"


globals().update(
    {n: f for n, f in vars(test_contract).items() if n.startswith("test_") and n not in LEFT_OUT}
)
