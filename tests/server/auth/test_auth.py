"""HTTP authentication end to end: the real server as a subprocess, JWTs and API keys."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import ROOT
from tests.server.transports.test_http_e2e import free_port, serve_command, stop, wait_until_healthy

pytestmark = pytest.mark.slow

SECRET = "test-secret-that-is-long-enough-for-hs256"
NOTES = {"alice": "Alice keeps zanzibarite crystals", "bob": "Bob bakes quokkaberry pies"}


def cli(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "knowledge_mcp", *args, "--data-dir", str(data_dir)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    return done


def token(user: str, *, secret: str = SECRET, ttl: int = 300, **headers: Any) -> str:
    now = int(time.time())
    return jwt.encode({"sub": user, "iat": now, "exp": now + ttl}, secret, algorithm="HS256", headers=headers)


def alg_none_token(user: str) -> str:
    return jwt.encode({"sub": user, "exp": int(time.time()) + 300}, None, algorithm="none")


def hs256_signed_with(secret: bytes, claims: dict[str, Any]) -> str:
    """The classic algorithm-confusion forgery: HS256 keyed with the server's public key
    (built by hand, since pyjwt refuses to sign with a PEM as an HMAC secret)."""

    def b64(data: bytes) -> bytes:
        return base64.urlsafe_b64encode(data).rstrip(b"=")

    signing_input = b64(b'{"alg":"HS256","typ":"JWT"}') + b"." + b64(json.dumps(claims).encode())
    signature = hmac.new(secret, signing_input, hashlib.sha256).digest()
    return (signing_input + b"." + b64(signature)).decode()


def start(data_dir: Path, log: Path, env: dict[str, str], *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with log.open("wb") as sink:
        process = subprocess.Popen(
            serve_command(data_dir, "--host", "127.0.0.1", "--port", str(port), *extra),
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=env,
        )
    wait_until_healthy(process, f"http://127.0.0.1:{port}/healthz", log)
    return process, f"http://127.0.0.1:{port}/mcp"


def import_user_notes(tmp: Path, data_dir: Path) -> None:
    """Each user in NOTES gets one note of their own, imported through the CLI."""
    for user, text in NOTES.items():
        folder = tmp / f"notes-{user}"
        folder.mkdir()
        (folder / f"{user}.md").write_text(f"# {user} note\n\n{text}.\n", encoding="utf-8")
        cli(data_dir, "import", "notes", str(folder), "--user", user)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """alice's and bob's notes, one active and one revoked API key for alice, an HS256 server."""
    tmp = tmp_path_factory.mktemp("auth")
    data_dir = tmp / "data"
    import_user_notes(tmp, data_dir)
    key = cli(data_dir, "keys", "create", "--user", "alice").stdout.strip()
    revoked = cli(data_dir, "keys", "create", "--user", "alice").stdout.strip()
    cli(data_dir, "keys", "revoke", revoked[:11])
    listing = cli(data_dir, "keys", "list").stdout
    assert key not in listing and key[:11] in listing and "revoked" in listing
    env = {**os.environ, "KNOWLEDGE_MCP_JWT_SECRET": SECRET}
    process, url = start(data_dir, tmp / "server.log", env)
    try:
        yield {"url": url, "key": key, "revoked": revoked, "data_dir": data_dir, "env": env}
    finally:
        stop(process)


async def found(url: str, headers: dict[str, str], query: str) -> list[str]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        result = await client.call_tool("notes_search", {"query": query})
        assert not result.is_error, result.content[0].text
        return [r["title"] for r in result.structured_content["results"]]


def post_initialize(url: str, headers: dict[str, str]) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    return httpx.post(url, json=body, headers={**accept, **headers}, timeout=10)


def test_no_credentials_is_401_with_www_authenticate_and_resource_metadata(server: dict[str, Any]) -> None:
    response = post_initialize(server["url"], {})
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and "resource_metadata=" in challenge
    metadata_url = challenge.split('resource_metadata="')[1].rstrip('"')
    metadata = httpx.get(metadata_url, timeout=10).json()
    assert metadata["resource"] == server["url"]
    assert metadata["bearer_methods_supported"] == ["header"]


@pytest.mark.anyio
async def test_a_jwt_for_alice_finds_alices_notes_and_never_bobs(server: dict[str, Any]) -> None:
    headers = {"Authorization": f"Bearer {token('alice')}"}
    assert await found(server["url"], headers, "zanzibarite") == ["alice note"]
    assert await found(server["url"], headers, "quokkaberry") == []
    bob = {"Authorization": f"Bearer {token('bob')}"}
    assert await found(server["url"], bob, "quokkaberry") == ["bob note"]


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(lambda: token("alice", ttl=-60), id="expired"),
        pytest.param(lambda: alg_none_token("alice"), id="alg-none"),
        pytest.param(lambda: token("alice", secret="not-the-configured-secret-at-all"), id="wrong-secret"),
        pytest.param(lambda: token("../etc"), id="invalid-user-id"),
        pytest.param(lambda: "km_not-a-real-key", id="unknown-api-key"),
    ],
)
def test_bad_tokens_are_401(server: dict[str, Any], bad: Any) -> None:
    """More forgeries (iss/aud, nbf, missing claims, mixed-key confusion…): test_isolation.py."""
    response = post_initialize(server["url"], {"Authorization": f"Bearer {bad()}"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer ")


def test_a_revoked_api_key_is_401(server: dict[str, Any]) -> None:
    for headers in ({"Authorization": f"Bearer {server['revoked']}"}, {"X-API-Key": server["revoked"]}):
        response = post_initialize(server["url"], headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer ")


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["bearer", "x-api-key"])
async def test_an_api_key_serves_its_user(server: dict[str, Any], how: str) -> None:
    key = server["key"]
    headers = {"Authorization": f"Bearer {key}"} if how == "bearer" else {"X-API-Key": key}
    assert await found(server["url"], headers, "zanzibarite") == ["alice note"]
    assert await found(server["url"], headers, "quokkaberry") == []


def test_token_command_mints_a_token_the_server_accepts(server: dict[str, Any]) -> None:
    minted = cli(
        server["data_dir"], "token", "--user", "bob", "--ttl", "60", env=server["env"]
    ).stdout.strip()
    assert jwt.decode(minted, SECRET, algorithms=["HS256"])["sub"] == "bob"
    assert post_initialize(server["url"], {"Authorization": f"Bearer {minted}"}).status_code == 200


def test_token_command_without_a_secret_says_so(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KNOWLEDGE_MCP_JWT_SECRET"}
    command = [sys.executable, "-m", "knowledge_mcp", "token", "--user", "bob", "--data-dir", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert done.returncode == 1 and "jwt_secret" in done.stderr and "Traceback" not in done.stderr


def test_an_hs256_token_is_401_on_an_rs256_server(tmp_path: Path) -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    key_file = tmp_path / "public.pem"
    key_file.write_bytes(pem)
    env = {k: v for k, v in os.environ.items() if k != "KNOWLEDGE_MCP_JWT_SECRET"}
    env["KNOWLEDGE_MCP_JWT_PUBLIC_KEY_FILE"] = str(key_file)
    process, url = start(tmp_path / "data", tmp_path / "server.log", env)
    try:
        now = int(time.time())
        claims = {"sub": "alice", "exp": now + 300}
        rs = jwt.encode(claims, private, algorithm="RS256")
        assert post_initialize(url, {"Authorization": f"Bearer {rs}"}).status_code == 200
        for forged in (token("alice"), hs256_signed_with(pem, claims)):
            response = post_initialize(url, {"Authorization": f"Bearer {forged}"})
            assert response.status_code == 401 and "www-authenticate" in response.headers
    finally:
        stop(process)


def test_no_auth_on_a_public_host_is_still_refused(tmp_path: Path) -> None:
    env = {**os.environ, "KNOWLEDGE_MCP_JWT_SECRET": SECRET}
    command = serve_command(tmp_path, "--no-auth", "--host", "0.0.0.0", "--port", str(free_port()))
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert done.returncode not in (0, None)
    assert "loopback" in done.stderr and "Traceback" not in done.stderr
