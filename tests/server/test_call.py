"""The request's call: built once per request from its authentication, read by every tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.server.app import Services, build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.tooling import current_call

from ..conftest import FIXTURES, call, import_into

pytestmark = pytest.mark.anyio


def counting_contexts(services: Services) -> list[str]:
    """Record each build of a request's context (the user, client and paths) on `services`: the
    method of the request it was built for."""
    built: list[str] = []
    build = services.context

    def context(request: Any) -> Any:
        made = build(request)
        built.append(request.method)
        return made

    services.context = context  # type: ignore[method-assign]
    return built


async def test_a_knowledge_search_over_every_source_builds_its_call_once(data_dir: Path) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    mcp, services = build_server(Settings(data_dir=data_dir))
    built = counting_contexts(services)
    try:
        async with Client(mcp) as client:
            found = await call(client, "knowledge_search", query="sourdough", session_id="s1")
            assert found["results"], "the search reads five sources' databases and the defaults"
            assert built.count("tools/call") == 1  # (the client's tools/list has a call of its own)
    finally:
        await services.close()


async def test_a_session_tool_reads_the_defaults_it_just_set(data_dir: Path) -> None:
    mcp, services = build_server(Settings(data_dir=data_dir))
    try:
        async with Client(mcp) as client:
            info = await call(client, "session_set_defaults", session_id="s2", snippet_length=120)
            assert info["defaults"]["snippet_length"] == 120
            again = await call(client, "session_info", session_id="s2")
            assert again["defaults"]["snippet_length"] == 120
            other = await call(client, "session_info", session_id="s3")
            assert other["defaults"]["snippet_length"] == Settings(data_dir=data_dir).snippet_length
    finally:
        await services.close()


async def test_with_authentication_on_a_request_without_credentials_is_refused_by_its_tools(
    data_dir: Path,
) -> None:
    mcp, services = build_server(
        Settings(data_dir=data_dir, jwt_secret="s" * 32, rate_limit_per_minute=0), authenticate=True
    )
    try:
        async with Client(mcp) as client:  # in memory: no HTTP request, so no verified user
            result = await client.call_tool("notes_search", {"query": "anything"})
            assert result.is_error
            assert "no verified credentials" in result.content[0].text
    finally:
        await services.close()


async def test_authentication_is_decided_when_the_services_are_built(data_dir: Path) -> None:
    settings = Settings(data_dir=data_dir, jwt_secret="s" * 32)
    with_auth = Services(settings, authenticate=True)
    without = Services(settings)
    try:
        assert with_auth.authenticated and with_auth.verifier is not None
        assert not without.authenticated and without.verifier is None
    finally:
        await with_auth.close()
        await without.close()


def test_outside_a_request_there_is_no_call() -> None:
    with pytest.raises(RuntimeError, match="no MCP request"):
        current_call()
