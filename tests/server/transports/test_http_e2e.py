"""The real server as a subprocess on a real port (streamable HTTP at /mcp), driven by the SDK client."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from knowledge_mcp.bench.http import stop_process
from tests.conftest import ROOT, item_id

pytestmark = pytest.mark.slow

START_TIMEOUT_S = 45.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_command(data_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "knowledge_mcp",
        "serve",
        "--transport",
        "http",
        "--data-dir",
        str(data_dir),
        *extra,
    ]


def stop(process: subprocess.Popen[bytes]) -> None:
    """End a server process: politely, then firmly (the bench's own helper, 10 s a step)."""
    stop_process(process, timeout=10)


def wait_until_healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> dict[str, Any]:
    """Poll GET /healthz (bounded); fail early with the server's log if it dies."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"server exited with {process.returncode}: {log.read_text(errors='replace')}")
        try:
            response = httpx.get(url, timeout=1.0)
        except httpx.TransportError:
            time.sleep(0.1)
            continue
        assert response.status_code == 200
        return dict(response.json())
    pytest.fail(f"server did not answer {url} within {START_TIMEOUT_S} s: {log.read_text(errors='replace')}")


@pytest.fixture(scope="module")
def http_server(
    tmp_path_factory: pytest.TempPathFactory, cli_imported_notes: Path
) -> Iterator[dict[str, Any]]:
    """The CLI-imported notes served by `serve --transport http --no-auth` on a free loopback port."""
    tmp = tmp_path_factory.mktemp("http")
    data_dir = cli_imported_notes
    port = free_port()
    log = tmp / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            serve_command(data_dir, "--no-auth", "--host", "127.0.0.1", "--port", str(port)),
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    try:
        health = wait_until_healthy(process, f"http://127.0.0.1:{port}/healthz", log)
        yield {"url": f"http://127.0.0.1:{port}/mcp", "health": health, "process": process}
    finally:
        stop(process)


def test_healthz_reports_ok_and_every_source(http_server: dict[str, Any]) -> None:
    health = http_server["health"]
    assert health["status"] == "ok"
    assert set(health["sources"]) == {"notes", "media", "chats", "characters", "prompts"}


@pytest.mark.anyio
async def test_http_client_lists_tools_searches_and_reads_within_budget(http_server: dict[str, Any]) -> None:
    async with Client(http_server["url"]) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"notes_search", "notes_get"} <= set(tools)
        assert tools["notes_search"].annotations is not None
        assert tools["notes_search"].annotations.read_only_hint is True

        found = await client.call_tool("notes_search", {"query": "field guide birds", "limit": 1})
        assert not found.is_error, found.content[0].text
        top = found.structured_content["results"][0]
        assert top["uri"] == f"notes://{item_id(top)}"

        args = {
            "note_id": item_id(top),
            "loc": top["loc"],
            "retrieval": {"mode": "chunk_with_siblings", "max_tokens": 300},
        }
        got = await client.call_tool("notes_get", args)
        assert not got.is_error, got.content[0].text
        body = got.structured_content
        assert body["meta"]["uri"] == top["uri"]
        assert body["mode_used"] == "chunk_with_siblings"
        assert 0 < body["estimated_tokens"] <= 300
        assert 0 < len(body["content"]) <= 300 * 4

        bad = await client.call_tool("notes_search", {"query": "bread", "limit": 1000})
        assert bad.is_error and "limit" in bad.content[0].text
        assert not (await client.call_tool("notes_search", {"query": "bread"})).is_error


def test_http_without_no_auth_or_off_loopback_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    runs = {
        "no-auth missing": subprocess.Popen(
            serve_command(tmp_path / "a", "--host", "127.0.0.1", "--port", str(free_port())),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        ),
        "public host": subprocess.Popen(
            serve_command(tmp_path / "b", "--no-auth", "--host", "0.0.0.0", "--port", str(free_port())),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        ),
    }
    outputs = {}
    try:
        for name, process in runs.items():
            outputs[name] = process.communicate(timeout=60)
    finally:
        for process in runs.values():
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
    assert runs["no-auth missing"].returncode not in (0, None)
    assert "--no-auth" in outputs["no-auth missing"][1] and "jwt_secret" in outputs["no-auth missing"][1]
    assert "Traceback" not in outputs["no-auth missing"][1]
    assert runs["public host"].returncode not in (0, None)
    assert "loopback" in outputs["public host"][1] and "0.0.0.0" in outputs["public host"][1]
    assert "Traceback" not in outputs["public host"][1]
    assert outputs["public host"][0] == ""  # nothing on stdout
