"""The end-to-end tests of knowledge_search, the deep-research aliases, item resources, the prompt
library and tool arguments, on the PostgreSQL item store.

The test functions of tests/server/test_knowledge_e2e.py (its HTTP ones), resources/
test_item_resources.py, resources/test_prompt_library.py and test_tool_arguments.py are collected
here a second time (as `test_<module>__<name>`) with this module's fixtures, which serve the
repo's fixtures from PostgreSQL (`pg_fixtures`): `client_factory` makes in-memory servers over it
(`imported` is the same fixtures in SQLite, the text the resources must give back),
`http_url` is a real `serve --transport http` subprocess over it. LEFT_OUT names what does not run
here, with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.registry import SOURCE_NAMES
from tests.conftest import FIXTURES, ROOT, PgFixtures, import_into, serve_args, store_env, store_settings
from tests.server import test_knowledge_e2e, test_tool_arguments
from tests.server.resources import test_item_resources, test_prompt_library
from tests.server.test_knowledge_e2e import only_text
from tests.server.transports.test_http_e2e import free_port, serve_command, stop, wait_until_healthy

pytestmark = pytest.mark.anyio

MODULES: dict[str, ModuleType] = {
    "knowledge": test_knowledge_e2e,
    "arguments": test_tool_arguments,
    "resources": test_item_resources,
    "prompts": test_prompt_library,
}
STDIO = "its server is a stdio subprocess of the SQLite store (test_stdio_search_and_fetch_on_postgresql)"
IMPORTS = "imports its own prompt files into SQLite"
LEFT_OUT: dict[str, str] = {
    "knowledge:test_stdio_knowledge_search_ranks_several_sources_and_the_session_hides_seen": STDIO,
    "knowledge:test_a_named_session_survives_a_server_restart": STDIO,
    "knowledge:test_stdio_search_and_fetch_have_the_exact_shapes": STDIO,
    "resources:test_over_stdio_a_hits_uri_reads_as_its_text": STDIO,
    "prompts:test_a_declared_default_makes_an_argument_optional_and_fills_it": IMPORTS,
    "prompts:test_the_list_is_read_per_call_so_a_new_import_shows_and_pages_continue": IMPORTS,
    "prompts:test_two_prompts_of_one_name_get_distinct_names": IMPORTS,
}
"""Tests of those modules that do not run here, and why."""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client_factory(pg_fixtures: PgFixtures) -> AsyncIterator[Any]:
    """tests/conftest.py's client_factory, reading the items from PostgreSQL."""
    hosts = []

    def make(**settings: Any) -> Client:
        store = store_settings("postgresql", pg_fixtures.url)
        mcp, host = build_server(Settings(data_dir=pg_fixtures.data_dir, **store, **settings))
        hosts.append(host)
        return Client(mcp)

    yield make
    for host in hosts:
        await host.close()


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same fixtures in SQLite files (the items keep their ids): test_item_resources reads
    an item's stored text from there, so its tests check PostgreSQL's resources against SQLite's
    text."""
    data_dir = tmp_path_factory.mktemp("sqlite-fixtures") / "data"
    for source in SOURCE_NAMES:
        assert anyio.run(lambda s=source: import_into(data_dir, s, FIXTURES / s)).added
    return data_dir


@pytest.fixture
def prompts(pg_fixtures: PgFixtures) -> Path:
    return pg_fixtures.data_dir


@pytest.fixture(scope="module")
def http_url(pg_fixtures: PgFixtures, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real `serve --transport http` over the fixtures in PostgreSQL."""
    port = free_port()
    log = tmp_path_factory.mktemp("pg-http-knowledge") / "server.log"
    env = {**os.environ, "KNOWLEDGE_MCP_DEEP_RESEARCH_ALIASES": "always"}
    env.update(store_env("postgresql", pg_fixtures.url))
    command = serve_command(pg_fixtures.data_dir, "--no-auth", "--host", "127.0.0.1", "--port", str(port))
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    try:
        wait_until_healthy(process, f"http://127.0.0.1:{port}/healthz", log)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


async def test_stdio_search_and_fetch_on_postgresql_have_the_exact_shapes(pg_fixtures: PgFixtures) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith("KNOWLEDGE_MCP_")}
    env = {
        **base,
        "KNOWLEDGE_MCP_DEEP_RESEARCH_ALIASES": "always",
        "KNOWLEDGE_MCP_EMBED_IN_BACKGROUND": "false",
    }
    env.update(store_env("postgresql", pg_fixtures.url))
    params = StdioServerParameters(
        command=sys.executable, args=serve_args(pg_fixtures.data_dir), env=env, cwd=str(ROOT)
    )
    async with Client(params) as client:
        found = only_text(await client.call_tool("search", {"query": "sourdough OR captain"}))
        assert set(found) == {"results"} and len(found["results"]) >= 2
        for hit in found["results"]:
            assert set(hit) == {"id", "title", "url"} and hit["url"]
            item = only_text(await client.call_tool("fetch", {"id": hit["id"]}))
            assert set(item) == {"id", "title", "text", "url", "metadata"}
            assert item["id"] == hit["id"] and item["text"].strip() and item["url"]


def collected() -> dict[str, Any]:
    """`test_<module>__<name>` for every test of MODULES but LEFT_OUT's."""
    tests = {}
    for short, module in MODULES.items():
        for name, function in vars(module).items():
            if name.startswith("test_") and f"{short}:{name}" not in LEFT_OUT:
                tests[f"test_{short}__{name.removeprefix('test_')}"] = function
    return tests


def test_every_left_out_test_still_exists() -> None:
    for key in LEFT_OUT:
        short, name = key.split(":")
        assert hasattr(MODULES[short], name), f"{key} was renamed or removed: update LEFT_OUT"


globals().update(collected())
