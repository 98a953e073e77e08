"""Credentials that end on open connections: the real server as a subprocess (credential cache 0),
a real streamable-HTTP client and a real WebSocket client. A key revoked with the CLI mid-session
(keys.db, and PostgreSQL with `database_url`) and a JWT whose exp passes mid-session refuse the
next call, and no note is written."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import SecretStr
from websockets.exceptions import ConnectionClosed

from knowledge_mcp.server.auth.credentials import CREDENTIAL_ENDED_CODE
from knowledge_mcp.server.auth.tokens import mint_token
from knowledge_mcp.server.config import Settings
from tests.postgres import fresh_database
from tests.server.auth.test_auth import SECRET, cli, start
from tests.server.transports.test_http_e2e import stop
from tests.server.transports.test_websocket import bearer, session

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

TOKEN_TTL_S = 10
"""Long enough to connect and write once on a busy machine; the tests then wait it out."""


@dataclass
class World:
    data_dir: Path
    url: str
    env: dict[str, str]

    @property
    def ws(self) -> str:
        return self.url.replace("http://", "ws://").removesuffix("/mcp") + "/ws"

    def write_key(self) -> str:
        made = cli(self.data_dir, "keys", "create", "--user", "alice", "--scope", "write", env=self.env)
        return made.stdout.strip()

    def revoke(self, key: str) -> None:
        cli(self.data_dir, "keys", "revoke", key[:11], env=self.env)

    def note(self, title: str) -> Path:
        return self.data_dir / "users" / "alice" / "notes" / f"{title}.md"


def serve(tmp: Path, extra_env: dict[str, str]) -> Iterator[World]:
    env = {
        **os.environ,
        "KNOWLEDGE_MCP_JWT_SECRET": SECRET,
        "KNOWLEDGE_MCP_CREDENTIAL_CACHE_S": "0",
        "KNOWLEDGE_MCP_EMBED_IN_BACKGROUND": "false",
        **extra_env,
    }
    process, url = start(tmp / "data", tmp / "server.log", env)
    try:
        yield World(tmp / "data", url, env)
    finally:
        stop(process)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """API keys in keys.db."""
    yield from serve(tmp_path_factory.mktemp("ending"), {})


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, pg_server: str) -> Iterator[World]:
    """API keys (and sessions, rate limits) in PostgreSQL."""
    with fresh_database(pg_server) as url:
        yield from serve(tmp_path_factory.mktemp("ending-pg"), {"KNOWLEDGE_MCP_DATABASE_URL": url})


@pytest.fixture(params=["keys.db", "postgresql"])
def world(request: pytest.FixtureRequest) -> World:
    return request.getfixturevalue("local" if request.param == "keys.db" else "shared")  # type: ignore[no-any-return]


@asynccontextmanager
async def http_client(url: str, credential: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=bearer(credential), timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def note_args(title: str) -> dict[str, Any]:
    return {"title": title, "content": f"{title}: written while the credential was valid."}


def expiring_token() -> tuple[str, int]:
    """A write JWT for alice that expires in TOKEN_TTL_S, and its exp."""
    token = mint_token(Settings(jwt_secret=SecretStr(SECRET)), "alice", TOKEN_TTL_S, ["write"])
    return token, int(jwt.decode(token, options={"verify_signature": False})["exp"])


async def wait_past(exp: int) -> None:
    """Until the server's clock is past `exp` (it compares whole seconds)."""
    await anyio.sleep(max(exp + 1.2 - time.time(), 0.0))


async def test_a_key_revoked_mid_http_session_refuses_the_next_call_and_writes_nothing(world: World) -> None:
    key = world.write_key()
    async with http_client(world.url, key) as client:
        made = await client.call_tool("notes_create", note_args("Http before revoke"))
        assert not made.is_error, made.content[0].text
        world.revoke(key)
        with pytest.raises(MCPError) as refused:
            await client.call_tool("notes_create", note_args("Http after revoke"))
    assert refused.value.error.code == CREDENTIAL_ENDED_CODE and "revoked" in refused.value.error.message
    assert world.note("Http before revoke").is_file() and not world.note("Http after revoke").exists()


async def test_a_key_revoked_mid_websocket_refuses_the_next_call_and_closes(world: World) -> None:
    key = world.write_key()
    async with session(world.ws, bearer(key)) as peer:
        await peer.tool("notes_create", **note_args("Ws before revoke"))
        world.revoke(key)
        reply = await peer.request(
            "tools/call", {"name": "notes_create", "arguments": note_args("Ws after revoke")}
        )
        assert reply["error"]["code"] == CREDENTIAL_ENDED_CODE and "revoked" in reply["error"]["message"]
        with pytest.raises(ConnectionClosed) as closed:
            await peer.request("tools/list")
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    assert world.note("Ws before revoke").is_file() and not world.note("Ws after revoke").exists()


async def test_a_jwt_that_expires_mid_http_session_refuses_the_next_call(local: World) -> None:
    token, exp = expiring_token()
    async with http_client(local.url, token) as client:
        made = await client.call_tool("notes_create", note_args("Http before expiry"))
        assert not made.is_error, made.content[0].text
        await wait_past(exp)
        with pytest.raises(MCPError) as refused:
            await client.call_tool("notes_create", note_args("Http after expiry"))
    assert refused.value.error.code == CREDENTIAL_ENDED_CODE and "expired" in refused.value.error.message
    assert local.note("Http before expiry").is_file() and not local.note("Http after expiry").exists()


async def test_a_jwt_that_expires_mid_websocket_ends_the_connection_before_the_next_call(
    local: World,
) -> None:
    token, exp = expiring_token()
    async with session(local.ws, bearer(token)) as peer:
        await peer.tool("notes_create", **note_args("Ws before expiry"))
        await wait_past(exp)
        with pytest.raises(ConnectionClosed) as closed:
            await peer.request(
                "tools/call", {"name": "notes_create", "arguments": note_args("Ws after expiry")}
            )
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    assert local.note("Ws before expiry").is_file() and not local.note("Ws after expiry").exists()
