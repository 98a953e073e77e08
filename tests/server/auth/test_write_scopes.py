"""Who may write, over HTTP: the real server as a subprocess, API keys and JWTs with and without
the write scope, through a real MCP client."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from knowledge_mcp.server.auth.keys import MIGRATIONS, SqliteKeyStore, keys_path
from knowledge_mcp.sources.storage.db import open_database
from knowledge_mcp.sources.text.frontmatter import split_front_matter
from tests.server.auth.test_auth import SECRET, cli, start
from tests.server.transports.test_http_e2e import stop

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

WRITE_TOOLS = {"notes_create", "notes_update"}


def jwt_for(user: str, **claims: Any) -> str:
    now = int(time.time())
    return jwt.encode({"sub": user, "iat": now, "exp": now + 300, **claims}, SECRET, algorithm="HS256")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """An HS256 server; alice has a read-only key and a write key."""
    tmp = tmp_path_factory.mktemp("scopes")
    data_dir = tmp / "data"
    read_key = cli(data_dir, "keys", "create", "--user", "alice").stdout.strip()
    write_key = cli(data_dir, "keys", "create", "--user", "alice", "--scope", "write").stdout.strip()
    listing = cli(data_dir, "keys", "list").stdout.splitlines()
    assert [line.rsplit("\t", 1)[1] for line in listing] == ["read", "write"]
    env = {**os.environ, "KNOWLEDGE_MCP_JWT_SECRET": SECRET}
    process, url = start(data_dir, tmp / "server.log", env)
    try:
        yield {"url": url, "read": read_key, "write": write_key, "data_dir": data_dir}
    finally:
        stop(process)


async def session(url: str, credential: str) -> tuple[set[str], Any, Any]:
    """The tools listed to `credential`, a notes_create call's result, and a search after it."""
    headers = {"Authorization": f"Bearer {credential}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        names = {t.name for t in (await client.list_tools()).tools}
        made = await client.call_tool("notes_create", {"title": "Quokka log", "content": "Quokkas at dawn."})
        found = await client.call_tool("notes_search", {"query": "quokkas dawn"})
        return names, made, found


async def test_a_read_only_key_neither_sees_nor_can_call_write_tools(server: dict[str, Any]) -> None:
    names, made, found = await session(server["url"], server["read"])
    assert "notes_search" in names and not names & WRITE_TOOLS
    assert made.is_error and "this credential is read-only" in made.content[0].text
    assert "--scope write" in made.content[0].text
    assert not (server["data_dir"] / "users" / "alice" / "notes").exists()
    assert not found.is_error


async def test_a_write_key_sees_and_calls_write_tools_into_the_users_own_folder(
    server: dict[str, Any],
) -> None:
    names, made, found = await session(server["url"], server["write"])
    assert names >= WRITE_TOOLS
    assert not made.is_error, made.content[0].text
    note = made.structured_content
    path = server["data_dir"] / "users" / "alice" / "notes" / note["path"]
    assert split_front_matter(path.read_text(encoding="utf-8"))[0]["title"] == "Quokka log"
    assert note["uri"] in [r["uri"] for r in found.structured_content["results"]]


async def test_a_jwt_writes_only_with_write_in_its_scope_claim(server: dict[str, Any]) -> None:
    plain, refused, _ = await session(server["url"], jwt_for("bob"))
    scoped, made, _ = await session(server["url"], jwt_for("bob", scope="read write"))
    assert not plain & WRITE_TOOLS and refused.is_error
    assert scoped >= WRITE_TOOLS and not made.is_error, made.content[0].text
    assert (server["data_dir"] / "users" / "bob" / "notes" / "Quokka log.md").is_file()


async def test_a_scope_claim_joined_by_a_no_break_space_grants_read_only(server: dict[str, Any]) -> None:
    names, refused, found = await session(server["url"], jwt_for("carol", scope="read\u00a0write"))
    assert "notes_search" in names and not names & WRITE_TOOLS
    assert refused.is_error and "this credential is read-only" in refused.content[0].text
    assert not found.is_error and not (server["data_dir"] / "users" / "carol" / "notes").exists()


async def test_a_folder_leading_out_is_refused_over_http(server: dict[str, Any]) -> None:
    headers = {"Authorization": f"Bearer {server['write']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(server["url"], http_client=http)) as client,
    ):
        refused = await client.call_tool("notes_create", {"title": "x", "content": "y", "folder": "../x"})
    assert refused.is_error and "folder: must be a relative sub-folder" in refused.content[0].text
    assert not (server["data_dir"] / "users" / "alice" / "x").exists()


async def test_keys_made_before_scopes_existed_stay_read_only(tmp_path: Path) -> None:
    old = await open_database(keys_path(tmp_path), MIGRATIONS[:1])
    async with old.transaction() as conn:
        columns = "key_hash, prefix, user_id, created_at"
        await conn.execute(f"INSERT INTO api_keys ({columns}) VALUES ('h', 'km_old', 'alice', 'x')")
    await old.close()
    store = await SqliteKeyStore.open(tmp_path)
    try:
        [record] = await store.list()
        made = await store.create("alice", ["write"])
        grant = await store.grant_for(made)
    finally:
        await store.close()
    assert record.scopes == () and record.prefix == "km_old"
    assert grant is not None and grant.scopes == ("write",)
