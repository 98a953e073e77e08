"""Probe 5, credential attacks over HTTP against a server holding an HS256 secret and an RS256
public key: each forged, stale or narrowed credential, and whether it was accepted where it
must be refused; and credentials that end (a key revoked, a JWT expiring) while a WebSocket or
streamable-HTTP session is open. The controls (a good JWT of each kind, a good key, a write-scope JWT) must be
accepted, or the probe proves nothing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import sys
import time
import warnings
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from knowledge_mcp.bench.http import Served, http_client, server_env, ws_client

from .calls.malformed import INITIALIZE

CANARY = "zorblefrumious"
REVOKE_CACHE_S = 6.0  # a valid credential is trusted for at most 5 s before it is looked up again


def rsa_key(folder: Path) -> tuple[Any, Path]:
    """A fresh RSA key and its public half as a PEM file (for `jwt_public_key_file`)."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    (folder / "public.pem").write_bytes(pem)
    return private, folder / "public.pem"


def keys(data_dir: Path, *args: str) -> str:
    command = [sys.executable, "-m", "knowledge_mcp", "keys", *args, "--data-dir", str(data_dir)]
    done = subprocess.run(command, env=server_env(), capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.strip()


def claims(user: str, ttl: int = 300, **more: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"sub": user, "iat": now, "exp": now + ttl, **more}


def hs256_keyed_with(secret: bytes, body: dict[str, Any]) -> str:
    """HS256 signed with the server's public key as the HMAC secret (algorithm confusion)."""

    def b64(data: bytes) -> bytes:
        return base64.urlsafe_b64encode(data).rstrip(b"=")

    signing_input = b64(b'{"alg":"HS256","typ":"JWT"}') + b"." + b64(json.dumps(body).encode())
    return (signing_input + b"." + b64(hmac.new(secret, signing_input, hashlib.sha256).digest())).decode()


def hs512(body: dict[str, Any], secret: str) -> str:
    with warnings.catch_warnings():  # the key is short for SHA-512: beside the point here
        warnings.simplefilter("ignore")
        return jwt.encode(body, secret, algorithm="HS512")


async def accepted(url: str, credential: str) -> bool:
    """Whether an `initialize` POST with this bearer credential gets past authentication."""
    headers = {
        "Authorization": f"Bearer {credential}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE})
    async with httpx2.AsyncClient(timeout=30) as http:
        return (await http.post(url, content=body.encode(), headers=headers)).status_code == 200


async def wrote(url: str, credential: str, user_text: str) -> bool:
    """Whether `notes_create` with this credential wrote a note."""
    async with http_client(url, credential) as client:
        result = await client.call_tool("notes_create", {"title": "Probe", "content": user_text})
        return not result.is_error


async def found(url: str, credential: str, query: str) -> bool:
    async with http_client(url, credential) as client:
        result = await client.call_tool("notes_search", {"query": query})
        return bool(not result.is_error and (result.structured_content or {}).get("results"))


async def attacks(server: Served, private: Any, pem: Path, data_dir: Path) -> dict[str, Any]:
    """Each attack -> accepted (True is a finding); each control -> accepted (False is broken)."""
    assert server.secret is not None
    secret, url = server.secret, server.url
    key = keys(data_dir, "create", "--user", "alice")
    revoked = keys(data_dir, "create", "--user", "alice")
    keys(data_dir, "revoke", revoked[:11])
    controls = {
        "hs256 jwt": await accepted(url, jwt.encode(claims("alice"), secret, algorithm="HS256")),
        "rs256 jwt": await accepted(url, jwt.encode(claims("alice"), private, algorithm="RS256")),
        "api key": await accepted(url, key),
        "write scope writes": await wrote(
            url, jwt.encode(claims("bob", scope="read write"), secret, algorithm="HS256"), CANARY
        ),
    }
    controls["owner finds own note"] = await found(
        url, jwt.encode(claims("bob"), secret, algorithm="HS256"), CANARY
    )
    attempts = {
        "alg none": await accepted(url, jwt.encode(claims("alice"), "", algorithm="none")),
        "wrong key": await accepted(url, jwt.encode(claims("alice"), "x" * 40, algorithm="HS256")),
        "expired": await accepted(url, jwt.encode(claims("alice", ttl=-60), secret, algorithm="HS256")),
        "hs256 keyed with the rs256 public key": await accepted(
            url, hs256_keyed_with(pem.read_bytes(), claims("alice"))
        ),
        "revoked api key": await accepted(url, revoked),
        "scope read\\u00a0write writes": await wrote(
            url, jwt.encode(claims("carol", scope="read\u00a0write"), secret, algorithm="HS256"), "nbsp"
        ),
        "Bob reads bob's note": await found(
            url, jwt.encode(claims("Bob"), secret, algorithm="HS256"), CANARY
        ),
        "jwt without exp": await accepted(url, jwt.encode({"sub": "alice"}, secret, algorithm="HS256")),
        "jwt living longer than max_token_lifetime_s": await accepted(
            url, jwt.encode(claims("alice", ttl=86_400 * 400), secret, algorithm="HS256")
        ),
        "jwt not valid before an hour from now": await accepted(
            url, jwt.encode(claims("alice", nbf=int(time.time()) + 3600), secret, algorithm="HS256")
        ),
        "hs512 (not pinned)": await accepted(url, hs512(claims("alice"), secret)),
        "api key with one character changed": await accepted(
            url, key[:-1] + ("a" if key[-1] != "a" else "b")
        ),
    }
    ended, answered_before = await ended_mid_connection(server, data_dir)
    attempts |= ended
    controls["sessions answered before their credential ended"] = answered_before
    return {
        "attacks": len(attempts),
        "accepted_when_should_be_refused": sum(attempts.values()),
        "accepted": [name for name, ok in attempts.items() if ok],
        "controls": len(controls),
        "controls_refused": [name for name, ok in controls.items() if not ok],
    }


async def still_answers(client: Any) -> bool:
    try:
        with anyio.fail_after(30):
            result = await client.call_tool("notes_search", {"query": "protein"})
    except Exception:  # refused as a JSON-RPC error, or the connection closed
        return False
    return not result.is_error


async def ended_mid_connection(server: Served, data_dir: Path) -> tuple[dict[str, bool], bool]:
    """Open WebSocket and HTTP sessions whose credential ends while they are open (a key revoked,
    a 4-second JWT expiring): does a call after the cache window still work? Also whether each
    answered before its credential ended (the control)."""
    assert server.secret is not None
    ws_url = server.url.replace("http://", "ws://").removesuffix("/mcp") + "/ws"
    ws_key, http_key = keys(data_dir, "create", "--user", "dave"), keys(data_dir, "create", "--user", "erin")
    short = jwt.encode(claims("frank", ttl=4), server.secret, algorithm="HS256")
    async with AsyncExitStack() as stack:
        sessions = {
            "key revoked on an open websocket": await stack.enter_async_context(ws_client(ws_url, ws_key)),
            "key revoked on an open http session": await stack.enter_async_context(
                http_client(server.url, http_key)
            ),
            "jwt expired on an open websocket": await stack.enter_async_context(ws_client(ws_url, short)),
            "jwt expired on an open http session": await stack.enter_async_context(
                http_client(server.url, short)
            ),
        }
        before = [await still_answers(client) for client in sessions.values()]
        keys(data_dir, "revoke", ws_key[:11])
        keys(data_dir, "revoke", http_key[:11])
        await anyio.sleep(REVOKE_CACHE_S)
        return {name: await still_answers(client) for name, client in sessions.items()}, all(before)
