"""Per-request config on streamable HTTP: `?config=` on the /mcp URL and `X-Knowledge-Config`,
against a real `serve --transport http --no-auth` subprocess and the SDK's HTTP client."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import call
from tests.server.transports.test_http_e2e import http_server  # noqa: F401  (the module-scoped server fixture)

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


# The SDK client speaks the stateless revision (no Mcp-Session-Id), so name a session to read
# the effective defaults back with session_info; the request config applies to it all the same.
@pytest.fixture
def sid() -> str:
    return f"request-config-{uuid.uuid4().hex}"


def raw_b64(value: Any) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


def b64(value: Any) -> str:
    """For a query string: + / = escaped."""
    return quote(raw_b64(value), safe="")


@asynccontextmanager
async def client(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=headers or {}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as mcp_client,
    ):
        yield mcp_client


async def test_the_query_parameter_sets_this_requests_defaults(
    http_server: dict[str, Any],  # noqa: F811
    sid: str,
) -> None:
    async with client(
        f"{http_server['url']}?config={b64({'snippet_length': 60, 'order_by': 'recent'})}"
    ) as c:
        defaults = (await call(c, "session_info", session_id=sid))["defaults"]
        assert (defaults["snippet_length"], defaults["order_by"]) == (60, "recent")
        found = await call(c, "notes_search", query="migration", limit=5)
        assert found["results"] and all(len(r["snippet"]) <= 60 for r in found["results"])
        assert found.get("warnings", []) == []  # no warnings: the empty list is left out
        await call(c, "session_set_defaults", snippet_length=80, session_id=sid)  # the session's defaults win
        assert (await call(c, "session_info", session_id=sid))["defaults"]["snippet_length"] == 80
    async with client(http_server["url"]) as plain:
        fresh = (await call(plain, "session_info", session_id=f"{sid}-plain"))["defaults"]
        assert fresh["snippet_length"] == 300


async def test_the_header_wins_over_the_query_parameter_key_by_key(
    http_server: dict[str, Any],  # noqa: F811
    sid: str,
) -> None:
    url = f"{http_server['url']}?config={b64({'snippet_length': 100, 'max_tokens': 700})}"
    header = base64.urlsafe_b64encode(json.dumps({"snippet_length": 70}).encode()).decode().rstrip("=")
    async with client(url, {"X-Knowledge-Config": header}) as c:
        defaults = (await call(c, "session_info", session_id=sid))["defaults"]
        assert (defaults["snippet_length"], defaults["max_tokens"]) == (70, 700)


async def test_a_malformed_header_warns_in_this_requests_result_and_never_fails(
    http_server: dict[str, Any],  # noqa: F811
) -> None:
    async with client(http_server["url"], {"X-Knowledge-Config": "@@not-base64@@"}) as c:
        for _ in range(2):  # every request carries the header, so every result says so
            result = await c.call_tool("notes_search", {"query": "field guide birds", "limit": 1})
            assert not result.is_error
            warnings = result.structured_content["warnings"]
            assert warnings == [
                "X-Knowledge-Config: not valid base64 (expected base64 of a JSON object); ignored"
            ]
            assert "warning: X-Knowledge-Config: not valid base64" in result.content[0].text
            assert result.structured_content["results"]


async def test_a_clamped_value_warns_with_key_and_range(
    http_server: dict[str, Any],  # noqa: F811
    sid: str,
) -> None:
    async with client(f"{http_server['url']}?config={b64({'sibling_window': 99})}") as c:
        found = await call(c, "notes_search", query="migration", limit=1)
        assert found["warnings"] == ["config (query parameter).sibling_window 99 is outside 0..20; used 20"]
        assert (await call(c, "session_info", session_id=sid))["defaults"]["sibling_window"] == 20


async def test_a_config_cannot_carry_identity_or_paths(
    http_server: dict[str, Any],  # noqa: F811
    sid: str,
) -> None:
    hostile = {
        "user_id": "mallory",
        "user": "mallory",
        "data_dir": "/nonexistent",
        "db_paths": {"notes": "/x"},
    }
    async with client(
        f"{http_server['url']}?config={b64(hostile)}", {"X-Knowledge-Config": raw_b64(hostile)}
    ) as c:
        found = await call(c, "notes_search", query="field guide birds", limit=1)
        assert found["results"] and not found.get("warnings")  # still the local user's own data
        assert (await call(c, "session_info", session_id=sid))["defaults"]["snippet_length"] == 300
