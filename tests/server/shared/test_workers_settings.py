"""What `--workers` accepts, and the pure parts of our session ids over stateless HTTP."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_mcp.server.transports.workers.session_ids import is_initialize


def test_several_workers_without_a_database_url_are_refused_in_one_sentence(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "knowledge_mcp", "serve", "--transport", "http", "--workers", "2"]
    done = subprocess.run(
        [*command, "--no-auth", "--port", "8999", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "knowledge-mcp: --workers 2 needs database_url (PostgreSQL): with SQLite, sessions and rate "
        "limits would not be shared between the workers"
    )


def test_several_workers_over_stdio_are_refused(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "knowledge_mcp", "serve", "--workers", "3", "--data-dir", str(tmp_path)]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "--workers applies to --transport http; stdio serves one client" in done.stderr


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}', True),
        (b'{"jsonrpc": "2.0", "method": "initialize"}', False),  # a notification: nothing to answer
        (b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}', False),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "initialize"}]', False),  # batches are refused anyway
        (b"not json", False),
        (b"", False),
    ],
)
def test_only_an_initialize_request_gets_a_new_session_id(body: bytes, expected: bool) -> None:
    assert is_initialize(body) is expected
