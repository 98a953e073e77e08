"""Over HTTP, with the PostgreSQL item store: `knowledge-mcp import --item-store postgresql` puts
alice's and bob's items of every source into one database, a real `serve --transport http`
subprocess reads them, and alice (by JWT) never gets anything of bob's from any search or get."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import ROOT
from tests.server.auth.test_auth import SECRET, start, stop, token
from tests.server.isolation_world import MARKERS, SOURCES, write_user_files

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


def pg_cli(data_dir: Path, url: str, *args: str) -> str:
    command = [sys.executable, "-m", "knowledge_mcp", *args, "--data-dir", str(data_dir)]
    command += ["--item-store", "postgresql", "--database-url", url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def server(tmp_path: Path, pg_url: str) -> Iterator[dict[str, Any]]:
    data_dir = tmp_path / "data"
    for user in ("alice", "bob"):
        for source, folder in write_user_files(tmp_path / "files", user).items():
            pg_cli(data_dir, pg_url, "import", source, str(folder), "--user", user)
    env = {
        **os.environ,
        "KNOWLEDGE_MCP_JWT_SECRET": SECRET,
        "KNOWLEDGE_MCP_ITEM_STORE": "postgresql",
        "KNOWLEDGE_MCP_DATABASE_URL": pg_url,
        "KNOWLEDGE_MCP_EMBED_IN_BACKGROUND": "false",
    }
    process, url = start(data_dir, tmp_path / "server.log", env, "--transport", "http")
    try:
        yield {"url": url, "data_dir": data_dir}
    finally:
        stop(process)


async def test_the_import_wrote_to_postgresql_and_not_to_sqlite(server: dict[str, Any]) -> None:
    assert not list(Path(server["data_dir"]).rglob("*.db"))


async def bobs_note(url: str) -> str:
    headers = {"Authorization": f"Bearer {token('bob')}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        result = await client.call_tool("notes_search", {"query": MARKERS["bob"]["notes"]})
        return str(result.structured_content["results"][0]["uri"])


async def test_over_http_alice_finds_her_items_in_postgresql_and_never_bobs(server: dict[str, Any]) -> None:
    bobs = await bobs_note(server["url"])
    headers = {"Authorization": f"Bearer {token('alice')}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(server["url"], http_client=http)) as client,
    ):

        async def uris(tool: str, **args: Any) -> list[str]:
            result = await client.call_tool(tool, args)
            assert not result.is_error, result.content[0].text
            return [r["uri"] for r in result.structured_content["results"]]

        mine: dict[str, str] = {}
        for source in SOURCES:
            found = await uris(f"{source}_search", query=MARKERS["alice"][source])
            assert len(found) >= 1, source
            mine[source] = found[0]
            assert await uris(f"{source}_search", query=MARKERS["bob"][source]) == [], source
            everyone = " OR ".join(MARKERS["bob"].values())
            assert await uris("knowledge_search", query=everyone) == []
        both = " OR ".join([*MARKERS["alice"].values(), *MARKERS["bob"].values()])
        assert {u.split("://")[0] for u in await uris("knowledge_search", query=both, limit=20)} == set(
            SOURCES
        )
        got = await client.call_tool("knowledge_get", {"uri": mine["notes"]})
        assert not got.is_error and MARKERS["alice"]["notes"] in str(got.structured_content["content"])
        for tool, args in (("knowledge_get", {"uri": bobs}), ("notes_get", {"note_id": bobs})):
            refused = await client.call_tool(tool, args)
            assert refused.is_error and MARKERS["bob"]["notes"] not in refused.content[0].text
