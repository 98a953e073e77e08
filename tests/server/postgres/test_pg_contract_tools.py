"""Each source's search and get tests (tests/sources/test_<source>_tools.py), on the PostgreSQL item store.

The same test functions, collected here a second time (as `test_<source>__<name>`) with this
module's client fixtures: a server reading the repo's fixtures from PostgreSQL (`pg_fixtures`,
imported once per run). A test joins automatically when it is added to its module; the ones
left out would be in LEFT_OUT with the reason (none today: filters, field-limited search and
transcripts found with a filter all run on PostgreSQL now).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from tests.conftest import PgFixtures, store_settings
from tests.sources import (
    test_characters_tools,
    test_chats_tools,
    test_media_tools,
    test_notes_tools,
    test_prompts_tools,
)

pytestmark = pytest.mark.anyio

MODULES: dict[str, ModuleType] = {
    "notes": test_notes_tools,
    "media": test_media_tools,
    "chats": test_chats_tools,
    "characters": test_characters_tools,
    "prompts": test_prompts_tools,
}

LEFT_OUT: dict[str, str] = {}
"""Tests of those modules that do not run here, and why. Besides, a test that builds its own
world (asks for `data_dir` or `client_factory`: it imports into SQLite) runs in
test_pg_contract_imports.py instead."""
OWN_WORLD = {"data_dir", "client_factory", "tmp_path"}


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


@pytest.fixture
async def pg_client(server: Any) -> AsyncIterator[Any]:
    async with Client(server) as client:
        yield client


@pytest.fixture
def notes_client(pg_client: Any) -> Any:
    return pg_client


@pytest.fixture
def media_client(pg_client: Any) -> Any:
    return pg_client


@pytest.fixture
def chats_client(pg_client: Any) -> Any:
    return pg_client


@pytest.fixture
def cards_client(pg_client: Any) -> Any:
    return pg_client


@pytest.fixture
def prompts_client(pg_client: Any) -> Any:
    return pg_client


def reads_the_served_fixtures(function: Any) -> bool:
    return not OWN_WORLD & set(inspect.signature(function).parameters)


def collected() -> dict[str, Any]:
    """`test_<source>__<name>` for every test of the source modules reading the served fixtures,
    but LEFT_OUT's."""
    tests = {}
    for source, module in MODULES.items():
        for name, function in vars(module).items():
            wanted = name.startswith("test_") and f"{source}:{name}" not in LEFT_OUT
            if wanted and reads_the_served_fixtures(function):
                tests[f"test_{source}__{name.removeprefix('test_')}"] = function
    return tests


def test_every_left_out_test_still_exists_and_most_tests_run_here() -> None:
    for key in LEFT_OUT:
        source, name = key.split(":")
        assert hasattr(MODULES[source], name), f"{key} was renamed or removed: update LEFT_OUT"
    everything = [n for m in MODULES.values() for n in vars(m) if n.startswith("test_")]
    assert len(collected()) >= 0.7 * len(everything), (len(collected()), len(everything))


globals().update(collected())
