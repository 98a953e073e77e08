"""The tool tests that import their own files, on the PostgreSQL item store.

They import into SQLite under `data_dir` (through tests/conftest.py's `import_into`) and then
ask `client_factory` for a server. Here `client_factory` makes a server reading PostgreSQL, and
before it opens, copies what the test imported into a fresh database with `knowledge-mcp
migrate`'s own code: so the test's SQLite reads (the stored text it compares with) and the
server's PostgreSQL answers hold the same items. The test functions are collected here a second
time (as `test_<module>__<name>`); LEFT_OUT names what does not run here, with the reason.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.server.app import Services, build_server
from knowledge_mcp.server.cli.migrate import run_migrate
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.registry import SOURCE_NAMES
from tests.aggregator import test_verify_quote
from tests.conftest import store_settings
from tests.server.resources import test_prompt_library
from tests.server.resources.test_prompt_library import prompts  # noqa: F401  (the fixture: imports into SQLite)
from tests.sources import test_characters_tools, test_chats_tools, test_media_tools

pytestmark = pytest.mark.anyio

MODULES: dict[str, ModuleType] = {
    "verify_quote": test_verify_quote,
    "prompts": test_prompt_library,
    "media": test_media_tools,
    "chats": test_chats_tools,
    "characters": test_characters_tools,
}
LEFT_OUT: dict[str, str] = {
    "prompts:test_the_list_is_read_per_call_so_a_new_import_shows_and_pages_continue": (
        "imports again while its server runs (the copy is made when the server opens)"
    ),
    "chats:test_character_links_resolve_card_names_case_insensitively": "a SQLite helper's unit test",
}
"""Tests of those modules that build their own world and do not run here, and why."""


class MigratedClient:
    """A client of a server reading PostgreSQL, the user's SQLite items copied there first."""

    def __init__(self, data_dir: Path, url: str, settings: dict[str, Any], hosts: list[Services]) -> None:
        self.data_dir, self.url, self.settings, self.hosts = data_dir, url, settings, hosts
        self.client: Client | None = None

    async def __aenter__(self) -> Any:
        user = Settings(data_dir=self.data_dir, **self.settings).user
        reports = await run_migrate(Settings(data_dir=self.data_dir, user=user), self.url, list(SOURCE_NAMES))
        assert all(r["verified"] for r in reports), reports  # none: the user has no items
        store = store_settings("postgresql", self.url)
        mcp, host = build_server(Settings(data_dir=self.data_dir, **store, **self.settings))
        self.hosts.append(host)
        self.client = Client(mcp)
        return await self.client.__aenter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self.client is not None
        await self.client.__aexit__(kind, exc, tb)


@pytest.fixture
async def client_factory(data_dir: Path, pg_url: str) -> AsyncIterator[Any]:
    """tests/conftest.py's client_factory on the PostgreSQL store (see the module's docstring)."""
    hosts: list[Services] = []

    def make(**settings: Any) -> MigratedClient:
        return MigratedClient(data_dir, pg_url, settings, hosts)

    yield make
    for host in hosts:
        await host.close()


def builds_its_own_world(function: Any) -> bool:
    return "client_factory" in inspect.signature(function).parameters


def collected() -> dict[str, Any]:
    """`test_<module>__<name>` for every test of MODULES asking for `client_factory`, but LEFT_OUT's."""
    tests = {}
    for short, module in MODULES.items():
        for name, function in vars(module).items():
            wanted = name.startswith("test_") and f"{short}:{name}" not in LEFT_OUT
            if wanted and builds_its_own_world(function):
                tests[f"test_{short}__{name.removeprefix('test_')}"] = function
    return tests


def test_every_left_out_test_still_exists() -> None:
    for key in LEFT_OUT:
        short, name = key.split(":")
        assert hasattr(MODULES[short], name), f"{key} was renamed or removed: update LEFT_OUT"


globals().update(collected())
