"""One data dir with every source's fixtures imported once; tests that change data use their own."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult, Implementation

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.registry import SOURCES
from tests.conftest import FIXTURES, import_into


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("aggregator") / "data"
    for name in SOURCES:
        anyio.run(import_into, data_dir, name, FIXTURES / name)
    return data_dir


@pytest.fixture
async def connect(imported: Path) -> AsyncIterator[Callable[..., Client]]:
    """Clients of a server over the shared data dir: connect(client_name=..., **settings)."""
    hosts = []

    def make(client_name: str = "pytest", **settings: Any) -> Client:
        mcp, host = build_server(Settings(data_dir=imported, **settings))
        hosts.append(host)
        return Client(mcp, client_info=Implementation(name=client_name, version="1.0"))

    yield make
    for host in hosts:
        await host.pool.close()


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def only_text_json(result: CallToolResult) -> Any:
    assert not result.is_error, result.content
    assert result.structured_content is None
    assert len(result.content) == 1 and result.content[0].type == "text"
    return json.loads(result.content[0].text)  # type: ignore[union-attr]
