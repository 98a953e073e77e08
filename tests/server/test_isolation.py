"""The adversarial isolation matrix: alice, holding valid credentials, attacks bob.

One real `serve --transport http` subprocess for the module, with every kind of credential on:
an HS256 secret and an RS256 public key (the mixed setup where algorithm confusion bites),
`jwt_issuer` / `jwt_audience`, API keys, `deep_research_aliases = always` (so `search`/`fetch`
are attacked too), a `public_url`, and a rate limit. alice and bob each have an item in every
source with a marker word of their own (tests/server/isolation_world.py).

The whole module runs once per item store: the SQLite files, and PostgreSQL (`item_store =
"postgresql"`: the items imported into one database, whose row-level security is a second line
of defence; with its `database_url` the sessions, keys and rate limits live there too).

alice (by JWT and by API key) calls EVERY tool the server lists with bob's ids, uris, session
ids and marker words, with a `config` query parameter naming bob, and with bob's
`Mcp-Session-Id`; nothing of bob's may come back and nothing of bob's may change. Forged,
expired and malformed credentials and crafted user ids are 401 with a `WWW-Authenticate`
challenge. (auth/test_auth.py covers the single-algorithm servers: alg none, expired, wrong secret,
unknown and revoked keys, HS256 on an RS256-only server.)

Requests are raw JSON-RPC over httpx: an attacker does not use a well-behaved client.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from knowledge_mcp.server.backend import opened
from knowledge_mcp.server.backend.protocols import Backend
from knowledge_mcp.server.config import Settings
from tests.conftest import ROOT, STORES, import_into_store, item_id, store_env
from tests.postgres import fresh_database
from tests.server.auth.test_auth import hs256_signed_with, start, stop
from tests.server.isolation_world import MARKERS, SOURCES, write_user_files

pytestmark = pytest.mark.slow

SECRET = "isolation-secret-" + "0123456789abcdef" * 4
ISSUER = "https://issuer.example.test"
AUDIENCE = "knowledge-mcp-isolation"
PUBLIC_URL = "https://knowledge.example.test/kb"
# Low enough to exhaust at once, and alice's matrix calls this tool only once per channel (3 times).
LIMITED_TOOL = "characters_search"
RATE_LIMIT = 3
PROTOCOL = "2025-11-25"
BOB_SESSION = "bob-research-1"
BOB_RESEARCH_NAME = "bob's secret study"
BOB_MARKERS = tuple(MARKERS["bob"].values())
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
HTTP = httpx.Client(timeout=30)  # one keep-alive connection pool for the module; closed with the server


def hs_token(sub: Any = "alice", *, secret: str = SECRET, ttl: int = 300, **claims: Any) -> str:
    now = int(time.time())
    body = {"sub": sub, "iat": now, "exp": now + ttl, "iss": ISSUER, "aud": AUDIENCE, **claims}
    return jwt.encode({k: v for k, v in body.items() if v is not None}, secret, algorithm="HS256")


class Rpc:
    """A raw MCP session over streamable HTTP: initialize, then JSON-RPC posts with its headers."""

    def __init__(self, url: str, headers: dict[str, str], query: str = "") -> None:
        self.url = url + query
        self.headers = {**ACCEPT, **headers}
        self.next_id = 1
        response = self.post("initialize", self.initialize_params())
        assert response.status_code == 200, response.text
        self.session_id = response.headers["mcp-session-id"]
        self.headers.update({"Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": PROTOCOL})
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert HTTP.post(self.url, json=note, headers=self.headers).status_code == 202

    @staticmethod
    def initialize_params() -> dict[str, Any]:
        client = {"name": "attacker", "version": "1"}
        return {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": client}

    def post(self, method: str, params: dict[str, Any], **headers: str) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.next_id += 1
        return HTTP.post(self.url, json=body, headers={**self.headers, **headers})

    def request(self, method: str, params: dict[str, Any], **headers: str) -> dict[str, Any]:
        response = self.post(method, params, **headers)
        assert response.status_code == 200, response.text
        return message_of(response)

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The tools/call result (tool errors included); a protocol error fails the test."""
        message = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in message, message
        return dict(message["result"])

    def structured(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = self.call(tool, arguments)
        assert not result.get("isError"), result
        if "structuredContent" in result:
            return dict(result["structuredContent"])
        return dict(json.loads(result["content"][0]["text"]))


def message_of(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer, from a JSON body or the last `data:` line of an SSE stream."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return dict(response.json())
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    answers = [json.loads(d) for d in data if d]
    return dict(next(m for m in reversed(answers) if "id" in m))


@dataclass
class World:
    url: str
    store: str
    database_url: str | None
    data_dir: Path
    log: Path
    alice_key: str
    bob_key: str
    rs_private: Any
    public_pem: bytes
    bob: Rpc
    bob_ids: dict[str, str] = field(default_factory=dict)
    bob_uris: dict[str, str] = field(default_factory=dict)
    bob_names: dict[str, str] = field(default_factory=dict)
    alice: dict[str, Rpc] = field(default_factory=dict)
    bob_research: str = ""


def keys_of(data_dir: Path, database_url: str | None) -> AbstractAsyncContextManager[Backend]:
    """The backend whose key store the server reads: PostgreSQL's with a database url, else keys.db."""
    return opened(Settings(data_dir=data_dir, database_url=database_url))


async def _populate(data_dir: Path, files: Path, item_store: str, url: str | None) -> tuple[str, str]:
    for user in ("alice", "bob"):
        folders = write_user_files(files, user)
        for source in SOURCES:
            imported = await import_into_store(item_store, url, data_dir, source, folders[source], user=user)
            assert imported.added >= 1
    async with keys_of(data_dir, url) as backend:
        return await backend.keys.create("alice"), await backend.keys.create("bob")


@pytest.fixture(scope="module", autouse=True)
def _http_pool() -> Iterator[None]:
    """The module's keep-alive pool, closed once both stores' servers are done."""
    yield
    HTTP.close()


@pytest.fixture(scope="module", params=STORES)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    store = str(request.param)
    if store == "sqlite":
        yield from make_world(tmp_path_factory, store, None)
        return
    with fresh_database(request.getfixturevalue("pg_server")) as url:
        yield from make_world(tmp_path_factory, store, url)


def make_world(
    tmp_path_factory: pytest.TempPathFactory, store: str, database_url: str | None
) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp(f"isolation-{store}")
    data_dir = tmp / "data"
    alice_key, bob_key = anyio.run(_populate, data_dir, tmp / "files", store, database_url)
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    (tmp / "public.pem").write_bytes(pem)
    env = {
        **os.environ,
        "KNOWLEDGE_MCP_JWT_SECRET": SECRET,
        "KNOWLEDGE_MCP_JWT_PUBLIC_KEY_FILE": str(tmp / "public.pem"),
        "KNOWLEDGE_MCP_JWT_ALGORITHMS": "HS256,RS256",
        "KNOWLEDGE_MCP_JWT_ISSUER": ISSUER,
        "KNOWLEDGE_MCP_JWT_AUDIENCE": AUDIENCE,
        "KNOWLEDGE_MCP_DEEP_RESEARCH_ALIASES": "always",
        "KNOWLEDGE_MCP_PUBLIC_URL": PUBLIC_URL,
        "KNOWLEDGE_MCP_RATE_LIMITS": json.dumps({LIMITED_TOOL: RATE_LIMIT}),
        **store_env(store, database_url),
    }
    log = tmp / "server.log"
    process, url = start(data_dir, log, env)
    try:
        bob = Rpc(url, {"Authorization": f"Bearer {hs_token('bob')}"})
        w = World(url, store, database_url, data_dir, log, alice_key, bob_key, private, pem, bob)
        for source in SOURCES:
            found = bob.structured(
                "knowledge_search", query=MARKERS["bob"][source], sources=[source], session_id=BOB_SESSION
            )
            top = found["results"][0]
            assert MARKERS["bob"][source] in json.dumps(top).lower(), top
            w.bob_ids[source], w.bob_uris[source] = item_id(top), top["uri"]
            w.bob_names[source] = top["title"]
        bob.structured("session_set_defaults", session_id=BOB_SESSION, snippet_length=77)
        bob.structured("session_cite", uris=[w.bob_uris["notes"]], session_id=BOB_SESSION)
        bob.structured("knowledge_search", query=MARKERS["bob"]["notes"])  # the transport session
        w.bob_research = bobs_research_session(w, url)
        w.alice = {
            "jwt": Rpc(url, {"Authorization": f"Bearer {hs_token('alice')}"}),
            "api-key": Rpc(url, {"X-API-Key": alice_key}),
            "jwt+config": Rpc(url, {"Authorization": f"Bearer {hs_token('alice')}"}, config_query(w)),
        }
        yield w
    finally:
        stop(process)


def bobs_research_session(w: World, url: str) -> str:
    """bob's named research session (on a second connection of his): a search, a citation with a
    quote, a note, each carrying his markers."""
    rpc = Rpc(url, {"Authorization": f"Bearer {hs_token('bob')}"})
    session_id = str(rpc.structured("session_start", name=BOB_RESEARCH_NAME)["session_id"])
    rpc.structured("knowledge_search", query=MARKERS["bob"]["media"])
    claim = f"claim about {MARKERS['bob']['prompts']}"
    rpc.structured("session_cite", uris=[w.bob_uris["notes"]], claim=claim, quote=MARKERS["bob"]["notes"])
    rpc.structured("session_note", text=f"bob's note on {MARKERS['bob']['chats']}")
    return session_id


def config_query(w: World) -> str:
    """A `config` parameter trying to become bob: it may tune snippets, never change identity."""
    bob_dir = str(w.data_dir / "users" / "bob")
    config = {"user_id": "bob", "user": "bob", "data_dir": bob_dir, "db_paths": bob_dir}
    config["snippet_length"] = 120
    return "?config=" + base64.urlsafe_b64encode(json.dumps(config).encode()).decode()


# Every tool, with the arguments alice tries against bob. A tool the server publishes and this
# table lacks fails test_the_matrix_covers_every_published_tool: new tools join the matrix.
Attack = Callable[[World], list[dict[str, Any]]]
ATTACKS: dict[str, Attack] = {
    "notes_search": lambda w: [{"query": m} for m in BOB_MARKERS] + [{"query": "bob", "keywords": ["bob"]}],
    "notes_get": lambda w: [
        {"note_id": w.bob_ids["notes"]},
        {"note_id": w.bob_uris["notes"]},
        {"note_id": f"../bob/{w.bob_ids['notes']}"},
    ],
    "media_search": lambda w: [
        {"query": MARKERS["bob"]["media"]},
        {"query": "report", "media_types": ["email"]},
    ],
    "media_get": lambda w: [{"media_id": w.bob_ids["media"]}, {"media_id": w.bob_uris["media"]}],
    "media_transcript": lambda w: [{"media_id": w.bob_ids["media"], "format": "json"}],
    "chats_search": lambda w: [{"query": MARKERS["bob"]["chats"]}, {"query": "bob", "by": "title"}],
    "chats_get": lambda w: [{"conversation_id": w.bob_ids["chats"]}],
    "characters_search": lambda w: [{"query": MARKERS["bob"]["characters"]}],
    "characters_get": lambda w: [{"character_id": w.bob_ids["characters"]}],
    "prompts_search": lambda w: [{"query": MARKERS["bob"]["prompts"]}],
    "prompts_get": lambda w: [
        {"prompt_id_or_name": w.bob_ids["prompts"]},
        {"prompt_id_or_name": w.bob_names["prompts"]},
    ],
    "knowledge_search": lambda w: [
        {"query": " OR ".join(BOB_MARKERS), "session_id": BOB_SESSION, "seen": "show"},
        {"query": MARKERS["bob"]["notes"], "session_id": w.bob.session_id},
    ],
    "knowledge_get": lambda w: (
        [{"uri": uri, "session_id": BOB_SESSION} for uri in w.bob_uris.values()]
        + [{"source": "notes", "id": w.bob_ids["notes"]}]
    ),
    "search": lambda w: [{"query": m} for m in BOB_MARKERS],
    "fetch": lambda w: [{"id": uri} for uri in w.bob_uris.values()],
    "session_info": lambda w: [{"session_id": BOB_SESSION}, {"session_id": w.bob.session_id}, {}],
    "session_cite": lambda w: [{"uris": list(w.bob_uris.values()), "session_id": BOB_SESSION}],
    "session_set_defaults": lambda w: [{"session_id": BOB_SESSION, "snippet_length": 51}],
    "session_reset": lambda w: [{"session_id": BOB_SESSION}, {"session_id": w.bob.session_id}],
    "session_start": lambda w: [{"name": BOB_RESEARCH_NAME}],
    "session_list": lambda w: [{}, {"limit": 100}],
    "session_note": lambda w: [{"text": "alice was here", "session_id": w.bob_research}],
    "session_export": lambda w: [
        {"session_id": w.bob_research},
        {"session_id": w.bob_research, "format": "json"},
        {"session_id": BOB_SESSION},
    ],
    "verify_quote": lambda w: [
        {"uri": uri, "quote": MARKERS["bob"][source]} for source, uri in w.bob_uris.items()
    ],
}
SESSION_TOOLS = {"session_info", "session_cite", "session_set_defaults", "session_reset"}


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def leaks(w: World, tool: str, arguments: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """What of bob's shows in `result`: any of his markers or titles, and for session tools the
    uris he has seen. What alice sent may be echoed back to her ("no item with id '…'"), so her own
    argument strings are taken out of the answer first."""
    text = json.dumps(result).lower()
    for sent in sorted(strings(arguments), key=len, reverse=True):
        text = text.replace(sent.lower(), "")
    found = [m for m in BOB_MARKERS if m in text]
    found += [t for t in w.bob_names.values() if t.lower() in text]
    if tool in SESSION_TOOLS:  # what bob saw or viewed; alice may cite any uri into her own session
        state = result.get("structuredContent") or {}
        found += [u for u in w.bob_uris.values() if u in state.get("seen", []) + state.get("viewed", [])]
    return found


def test_the_matrix_covers_every_published_tool(world: World) -> None:
    for rpc in (world.bob, *world.alice.values()):
        listed = {t["name"] for t in rpc.request("tools/list", {})["result"]["tools"]}
        assert listed == set(ATTACKS), f"tools missing from ATTACKS: {sorted(listed - set(ATTACKS))}"


@pytest.mark.parametrize("channel", ["jwt", "api-key", "jwt+config"])
def test_alice_finds_her_own_items_on_every_channel(world: World, channel: str) -> None:
    """The control: each channel works, so a clean answer in the matrix means isolation."""
    rpc = world.alice[channel]
    for source in SOURCES:
        marker = MARKERS["alice"][source]
        found = rpc.structured("knowledge_search", query=marker, sources=[source], seen="show")
        assert marker in json.dumps(found["results"]).lower(), (source, found)


@pytest.mark.parametrize("channel", ["jwt", "api-key", "jwt+config"])
@pytest.mark.parametrize("tool", sorted(ATTACKS))
def test_alice_can_never_see_bobs_data_through_any_tool(world: World, tool: str, channel: str) -> None:
    rpc = world.alice[channel]
    for arguments in ATTACKS[tool](world):
        result = rpc.call(tool, arguments)
        assert not leaks(world, tool, arguments, result), (tool, arguments, result)
        assert "rate limit" not in json.dumps(result), "the matrix must not run into the rate limit"


@pytest.mark.parametrize("channel", ["jwt", "api-key", "jwt+config"])
def test_alices_counts_and_totals_count_only_her_items(world: World, channel: str) -> None:
    """A query both users' items match ("alice OR bob"): every count and total is alice's alone
    (one item per source), so no total tells her how many items bob has."""
    rpc = world.alice[channel]
    for source in SOURCES:
        # the rate-limited tool's budget is the matrix's: its source is counted by knowledge_search
        tool, args = (
            (f"{source}_search", {})
            if source != "characters"
            else ("knowledge_search", {"sources": [source]})
        )
        page = rpc.structured(tool, query="alice OR bob", limit=50, **args)
        assert page["count"] == 1, (source, page)
        assert page.get("total_estimated", 1) == 1 and not page.get("has_more"), (source, page)
    merged = rpc.structured("knowledge_search", query="alice OR bob", limit=50, seen="show")
    assert sorted(h["uri"].split("://")[0] for h in merged["results"]) == sorted(SOURCES)
    assert merged.get("total_estimated", len(SOURCES)) == len(SOURCES) and not merged.get("has_more")
    bobs = world.bob.structured("media_search", query=f"alice OR {MARKERS['bob']['media']}", limit=50)
    assert bobs["count"] == 2  # the control: his email and his transcript


def test_alices_media_types_resource_lists_only_her_media(world: World) -> None:
    for rpc in world.alice.values():
        contents = rpc.request("resources/read", {"uri": "media://types"})["result"]["contents"]
        text = contents[0]["text"]
        assert "txt" in text and "email" not in text and "transcript" not in text, text
    bobs = world.bob.request("resources/read", {"uri": "media://types"})["result"]["contents"][0]["text"]
    assert "email" in bobs and "transcript" in bobs


def test_alice_cannot_read_list_or_render_bobs_items_as_resources_or_prompts(world: World) -> None:
    for rpc in world.alice.values():
        for uri in world.bob_uris.values():
            message = rpc.request("resources/read", {"uri": uri})
            assert message["error"]["code"] == -32602, message
            assert not any(m in json.dumps(message).lower() for m in BOB_MARKERS), message
        listed = rpc.request("resources/list", {})["result"]["resources"]
        assert {r["uri"] for r in listed}.isdisjoint(world.bob_uris.values())
        assert not any(m in json.dumps(listed).lower() for m in BOB_MARKERS)
        prompts = rpc.request("prompts/list", {})["result"]["prompts"]
        assert [p["name"] for p in prompts] == [f"alice-{MARKERS['alice']['prompts']}-helper"]
        for name in (f"bob-{MARKERS['bob']['prompts']}-helper", world.bob_ids["prompts"]):
            message = rpc.request("prompts/get", {"name": name, "arguments": {}})
            assert message["error"]["code"] == -32602, message  # only the name she sent comes back
            mine = f"alice-{MARKERS['alice']['prompts']}-helper"
            assert message["error"]["message"] == f"unknown prompt {name!r}; the prompts are: {mine}"
    own = world.bob.request("resources/read", {"uri": world.bob_uris["notes"]})["result"]["contents"][0]
    assert MARKERS["bob"]["notes"] in own["text"]  # the control: bob reads his own
    bobs = world.bob.request("prompts/get", {"name": f"bob-{MARKERS['bob']['prompts']}-helper"})
    assert MARKERS["bob"]["prompts"] in json.dumps(bobs["result"])


@pytest.mark.parametrize("tool", sorted(ATTACKS))
def test_bobs_mcp_session_id_with_alices_credentials_is_an_unknown_session(world: World, tool: str) -> None:
    """The transport session belongs to the credential that opened it: alice gets what an unknown
    session id gets, never bob's session. The single-process server answers 404; with shared state
    (`database_url`) the stateless transport serves any id, each user's state kept apart under it."""
    unknown = uuid.uuid4().hex
    for credential in ({"Authorization": f"Bearer {hs_token('alice')}"}, {"X-API-Key": world.alice_key}):
        statuses = []
        for session_id in (world.bob.session_id, unknown):
            headers = {**ACCEPT, **credential, "Mcp-Session-Id": session_id}
            headers["MCP-Protocol-Version"] = PROTOCOL
            params = {"name": tool, "arguments": ATTACKS[tool](world)[0]}
            body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
            response = HTTP.post(world.url, json=body, headers=headers)
            assert not any(m in response.text.lower() for m in BOB_MARKERS), response.text
            statuses.append(response.status_code)
        assert statuses == ([404, 404] if world.database_url is None else [200, 200]), statuses


def test_alice_cannot_end_reset_or_retune_bobs_sessions(world: World) -> None:
    alice = world.alice["jwt"]
    for session_id in (BOB_SESSION, world.bob.session_id):
        alice.structured("session_reset", session_id=session_id)
        alice.structured("session_set_defaults", session_id=session_id, snippet_length=51)
        alice.structured("session_cite", uris=[world.bob_uris["media"]], session_id=session_id)
    delete = {"Authorization": f"Bearer {hs_token('alice')}", "Mcp-Session-Id": world.bob.session_id}
    # as for an unknown id: 404, or with shared state the end of alice's own state under that id
    assert HTTP.delete(world.url, headers=delete).status_code == (404 if world.database_url is None else 200)

    explicit = world.bob.structured("session_info", session_id=BOB_SESSION)
    assert set(world.bob_uris.values()) <= set(explicit["seen"])
    assert explicit["cited"] == [world.bob_uris["notes"]]
    assert explicit["defaults"]["snippet_length"] == 77
    assert any(MARKERS["bob"]["notes"] in q for q in explicit["recent_queries"])
    transport = world.bob.structured("session_info")  # bob's Mcp-Session-Id still open and his
    assert transport["session_id"] == world.bob.session_id
    assert world.bob_uris["notes"] in transport["seen"]
    assert transport["defaults"]["snippet_length"] == 300  # the config default, not alice's 51


def test_alice_cannot_resume_export_read_or_write_bobs_research_session(world: World) -> None:
    alice = world.alice["api-key"]
    mine = alice.structured("session_start", name=BOB_RESEARCH_NAME)
    assert mine["session_id"] != world.bob_research  # her own (new, or made by the matrix)
    alice.structured("session_note", text="alice was here", session_id=world.bob_research)
    uri = f"knowledge://sessions/{world.bob_research}/export.md"
    for rpc in world.alice.values():
        message = rpc.request("resources/read", {"uri": uri})
        assert not any(m in json.dumps(message).lower() for m in BOB_MARKERS), message
    bobs = world.bob.request("resources/read", {"uri": uri})["result"]["contents"][0]["text"]
    assert MARKERS["bob"]["chats"] in bobs and MARKERS["bob"]["prompts"] in bobs
    assert "alice was here" not in bobs
    listed = world.bob.structured("session_list")["sessions"]
    assert [s["name"] for s in listed] == [BOB_RESEARCH_NAME] and listed[0]["notes"] == 1


def test_a_user_exhausting_a_tools_rate_limit_never_slows_another_user(world: World) -> None:
    """carol (the attacker, by JWT) spends her whole budget for the tool; dave, and carol's other
    tools, go on. (carol and dave, so the matrix's own calls as alice and bob never interfere.)"""
    carol = Rpc(world.url, {"Authorization": f"Bearer {hs_token('carol')}"})
    dave = Rpc(world.url, {"Authorization": f"Bearer {hs_token('dave')}"})
    for _ in range(RATE_LIMIT):
        carol.structured(LIMITED_TOOL, query="anything")
    limited = carol.call(LIMITED_TOOL, {"query": "anything"})
    assert limited["isError"] is True
    text = limited["content"][0]["text"]
    assert LIMITED_TOOL in text and f"{RATE_LIMIT} calls per minute" in text, text
    retry = re.search(r"retry in (\d+) s", text)
    assert retry is not None and 1 <= int(retry.group(1)) <= 60
    assert dave.structured(LIMITED_TOOL, query="anything")["count"] == 0
    carol.structured("prompts_search", query="anything")  # her other tools keep their own budget


def test_request_log_names_users_and_tools_but_never_credentials_or_bobs_markers(world: World) -> None:
    """Runs after the matrix (file order); any order still checks what has been logged so far."""
    log = world.log.read_text(errors="replace")
    # the stateless transport of shared state (`database_url`) does not keep the client's name
    client = "attacker" if world.database_url is None else "-"
    assert f"user=alice client={client} method=tools/call tool=notes_get" in log
    for secret in (world.alice_key, world.bob_key, SECRET, *BOB_MARKERS, *MARKERS["alice"].values()):
        assert secret not in log
    assert "eyJ" not in log  # no JWT (their header always starts so) and no "km_" key
    assert "km_" not in log
    assert "postgresql://" not in log  # nor the database url


# --- identity: crafted user ids and forged credentials are 401 with a challenge ---------------


def assert_401(world: World, headers: dict[str, str]) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": Rpc.initialize_params()}
    response = HTTP.post(world.url, json=body, headers={**ACCEPT, **headers})
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith("Bearer ")


# Traversal, encoded traversal, too long, empty, look-alikes (Cyrillic о, fullwidth), control chars.
BAD_USER_IDS = ["../bob", "a/../../bob", "%2e%2e", "..", ".", "a" * 65, "", "bоb", "ｂｏｂ", "bob\n", "bob/"]


@pytest.mark.parametrize("sub", BAD_USER_IDS, ids=[repr(s)[:20] for s in BAD_USER_IDS])
def test_a_jwt_naming_a_crafted_user_id_is_401(world: World, sub: str) -> None:
    assert_401(world, {"Authorization": f"Bearer {hs_token(sub)}"})


# The CLI's own entry point, once per crafted id, in ONE interpreter (a process each is slow).
KEYS_CREATE_EACH = """
import contextlib, io, json, sys
from knowledge_mcp.server.cli import main
out = []
for user in json.loads(sys.argv[2]):
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["keys", "create", "--user", user, "--data-dir", sys.argv[1]])
    out.append([user, code, stdout.getvalue(), stderr.getvalue()])
print(json.dumps(out))
"""


def test_keys_create_refuses_every_crafted_user_id(tmp_path: Path) -> None:
    command = [sys.executable, "-c", KEYS_CREATE_EACH, str(tmp_path), json.dumps(BAD_USER_IDS)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for user, code, out, err in json.loads(done.stdout):
        assert code == 1, (user, out, err)
        assert out == "" and "user" in err and "Traceback" not in err, (user, err)
    listing = subprocess.run(
        [sys.executable, "-m", "knowledge_mcp", "keys", "list", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert listing.returncode == 0 and listing.stdout == ""


def _forgeries(w: World) -> dict[str, str]:
    now = int(time.time())
    claims = {"sub": "alice", "iat": now, "exp": now + 300, "iss": ISSUER, "aud": AUDIENCE}
    other_rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    return {
        "hs256-keyed-with-the-public-key": hs256_signed_with(w.public_pem, claims),
        "rs256-signed-by-another-key": jwt.encode(claims, other_rsa, algorithm="RS256"),
        "es256-not-in-jwt-algorithms": jwt.encode(claims, ec_key, algorithm="ES256"),
        "alg-none": jwt.encode(claims, None, algorithm="none"),
        "hs512-not-pinned": jwt.encode(claims, SECRET, algorithm="HS512"),
        "expired": hs_token(ttl=-60),
        "nbf-in-the-future": hs_token(nbf=now + 600),
        "wrong-issuer": hs_token(iss="https://evil.example.test"),
        "missing-issuer": hs_token(iss=None),
        "wrong-audience": hs_token(aud="some-other-service"),
        "missing-audience": hs_token(aud=None),
        "missing-sub": hs_token(sub=None),
        "non-string-sub": jwt.encode({**claims, "sub": 42}, SECRET, algorithm="HS256"),
        "missing-exp": jwt.encode({k: v for k, v in claims.items() if k != "exp"}, SECRET, algorithm="HS256"),
        "wrong-secret": hs_token(secret="not-the-configured-secret-at-all!!"),
        "malformed": "not.a.jwt",
        "garbage": "%%%",
        "truncated": hs_token()[:-10],
        "signature-stripped": hs_token().rsplit(".", 1)[0] + ".",
        "claims-swapped-to-bob": ".".join(
            [hs_token().split(".")[0], hs_token("bob").split(".")[1], hs_token().split(".")[2]]
        ),
        "unknown-api-key": "km_" + "A" * 43,
    }


FORGERIES = [
    "hs256-keyed-with-the-public-key",
    "rs256-signed-by-another-key",
    "es256-not-in-jwt-algorithms",
    "alg-none",
    "hs512-not-pinned",
    "expired",
    "nbf-in-the-future",
    "wrong-issuer",
    "missing-issuer",
    "wrong-audience",
    "missing-audience",
    "missing-sub",
    "non-string-sub",
    "missing-exp",
    "wrong-secret",
    "malformed",
    "garbage",
    "truncated",
    "signature-stripped",
    "claims-swapped-to-bob",
    "unknown-api-key",
]


@pytest.fixture(scope="module")
def forgeries(world: World) -> dict[str, str]:
    made = _forgeries(world)
    assert set(made) == set(FORGERIES)
    return made


@pytest.mark.parametrize("name", FORGERIES)
def test_a_forged_or_invalid_credential_is_401_with_a_challenge(
    world: World, forgeries: dict[str, str], name: str
) -> None:
    assert_401(world, {"Authorization": f"Bearer {forgeries[name]}"})


def test_valid_hs256_and_rs256_tokens_with_issuer_and_audience_are_accepted(world: World) -> None:
    now = int(time.time())
    claims = {"sub": "alice", "exp": now + 300, "iss": ISSUER, "aud": AUDIENCE}
    for token in (hs_token(), jwt.encode(claims, world.rs_private, algorithm="RS256")):
        Rpc(world.url, {"Authorization": f"Bearer {token}"})


def test_a_revoked_api_key_is_401_with_a_challenge(world: World) -> None:
    async def revoke() -> str:
        async with keys_of(world.data_dir, world.database_url) as backend:
            key = await backend.keys.create("alice")
            assert await backend.keys.revoke(key[:11])
            return key

    key = anyio.run(revoke)
    assert_401(world, {"Authorization": f"Bearer {key}"})
    assert_401(world, {"X-API-Key": key})
    assert_401(world, {})


# --- public_url --------------------------------------------------------------------------------


def test_the_401_challenge_and_resource_metadata_use_public_url(world: World) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": Rpc.initialize_params()}
    response = HTTP.post(world.url, json=body, headers=ACCEPT)
    assert response.status_code == 401
    expected = "https://knowledge.example.test/.well-known/oauth-protected-resource/kb/mcp"
    assert f'resource_metadata="{expected}"' in response.headers["www-authenticate"]
    local = world.url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/kb/mcp"
    metadata = HTTP.get(local).json()
    assert metadata["resource"] == f"{PUBLIC_URL}/mcp"


def test_behind_a_proxy_the_public_host_is_accepted_and_others_are_not(world: World) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": Rpc.initialize_params()}
    token = {"Authorization": f"Bearer {hs_token()}"}
    proxied = {
        **ACCEPT,
        **token,
        "Host": "knowledge.example.test",
        "Origin": "https://knowledge.example.test",
    }
    assert HTTP.post(world.url, json=body, headers=proxied).status_code == 200
    rebound = {**ACCEPT, **token, "Host": "evil.example.test"}
    assert HTTP.post(world.url, json=body, headers=rebound).status_code != 200
