"""One server for every transport: `serve --transport http` answers streamable HTTP at /mcp and
WebSocket at /ws on the same port, with the same credentials; `--transport ws` is an alias."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from tests.server.auth.test_auth import SECRET, found, import_user_notes, start, token
from tests.server.transports.test_http_e2e import stop
from tests.server.transports.test_websocket import bearer, session, titles, ws_connect

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


def _serve(tmp: Path, transport: str) -> tuple[Any, str]:
    data_dir = tmp / "data"
    import_user_notes(tmp, data_dir)
    env = {**os.environ, "KNOWLEDGE_MCP_JWT_SECRET": SECRET}
    return start(data_dir, tmp / "server.log", env, "--transport", transport)


@pytest.fixture(scope="module", params=["http", "ws"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    process, url = _serve(tmp_path_factory.mktemp(f"one-{request.param}"), request.param)
    try:
        yield {"mcp": url, "ws": url.replace("http://", "ws://").removesuffix("/mcp") + "/ws"}
    finally:
        stop(process)


async def test_an_http_client_and_a_websocket_client_share_one_port(server: dict[str, str]) -> None:
    assert await found(server["mcp"], bearer(token("alice")), "zanzibarite") == ["alice note"]
    async with session(server["ws"], bearer(token("bob"))) as peer:
        found_by_bob = await peer.structured("notes_search", query="quokkaberry zanzibarite")
    assert titles(found_by_bob) == ["bob note"]


async def test_the_websocket_on_the_http_port_still_requires_credentials(server: dict[str, str]) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with ws_connect(server["ws"]):
            pass
    assert refused.value.response.status_code == 401
