"""DNS-rebinding protection of `serve --transport http --no-auth` on loopback addresses.

A hostile web page that rebinds its own name to our loopback address makes the browser send
`Host: evil.example` (and `Origin: http://evil.example`); the server must refuse those before
doing any MCP work, and keep accepting loopback names. 127.0.0.2 is loopback too (Linux routes
all of 127.0.0.0/8 to lo) but is not one of the literal hosts the SDK protects by itself.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT
from tests.server.transports.test_http_e2e import free_port, serve_command, stop, wait_until_healthy

pytestmark = pytest.mark.slow

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "rebinding-test", "version": "1"},
    },
}
DISCOVER_VERSION = "2026-07-28"
DISCOVER = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "server/discover",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": DISCOVER_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module", params=["127.0.0.1", "127.0.0.2"])
def loopback_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    host = str(request.param)
    tmp_path = tmp_path_factory.mktemp("rebinding")
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            serve_command(tmp_path / "data", "--no-auth", "--host", host, "--port", str(port)),
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    try:
        wait_until_healthy(process, f"http://{host}:{port}/healthz", log)
        yield {"url": f"http://{host}:{port}/mcp", "host": host, "port": port}
    finally:
        stop(process)


def post(server: dict[str, Any], body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(server["url"], json=body, headers={**ACCEPT, **headers}, timeout=10.0)


def test_foreign_host_header_is_refused(loopback_server: dict[str, Any]) -> None:
    response = post(loopback_server, INITIALIZE, Host="evil.example")
    assert response.status_code == 421
    assert "mcp-session-id" not in response.headers


def test_foreign_host_with_our_port_is_refused(loopback_server: dict[str, Any]) -> None:
    response = post(loopback_server, INITIALIZE, Host=f"evil.example:{loopback_server['port']}")
    assert response.status_code == 421


def test_foreign_origin_is_refused(loopback_server: dict[str, Any]) -> None:
    response = post(loopback_server, INITIALIZE, Origin="http://evil.example")
    assert response.status_code == 403
    assert "mcp-session-id" not in response.headers


def test_stateless_request_with_foreign_host_is_refused(loopback_server: dict[str, Any]) -> None:
    response = post(
        loopback_server,
        DISCOVER,
        Host="evil.example",
        **{"MCP-Protocol-Version": DISCOVER_VERSION, "Mcp-Method": "server/discover"},
    )
    assert response.status_code == 421


@pytest.mark.parametrize("name", ["localhost", "127.0.0.1", "[::1]", "bound"])
def test_loopback_host_and_origin_are_served(loopback_server: dict[str, Any], name: str) -> None:
    host = loopback_server["host"] if name == "bound" else name
    authority = f"{host}:{loopback_server['port']}"
    response = post(loopback_server, INITIALIZE, Host=authority, Origin=f"http://{authority}")
    assert response.status_code == 200, response.text
    assert response.headers["mcp-session-id"]
    assert '"serverInfo"' in response.text
