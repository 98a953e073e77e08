"""A stdio server's costs per call: the answers' pipe is widened, so a top-100 page is written in
one call; the garbage collector leaves the built server out of its walks while it serves."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from knowledge_mcp.server.transports.collecting import YOUNG_OBJECTS, fewer_collections
from knowledge_mcp.server.transports.stdio import PIPE_BYTES, widen_pipe
from tests.conftest import ROOT, serve_args

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="F_SETPIPE_SZ is Linux's")


@linux_only
def test_a_pipe_is_widened_and_holds_a_page_without_a_reader() -> None:
    read_end, write_end = os.pipe()
    try:
        assert widen_pipe(write_end) == PIPE_BYTES
        os.set_blocking(write_end, False)
        page = b"x" * 200_000  # a top-100 answer is ~100 KB; a default pipe holds 64 KiB
        assert os.write(write_end, page) == len(page)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_what_is_not_a_pipe_is_left_alone(tmp_path: Path) -> None:
    with (tmp_path / "out").open("wb") as file:
        assert widen_pipe(file.fileno()) is None
    assert widen_pipe(-1) is None


@linux_only
@pytest.mark.slow
def test_the_stdio_servers_answers_pipe_is_widened(cli_imported_notes: Path) -> None:
    client = {"name": "t", "version": "0"}
    initialize = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
    process = subprocess.Popen(
        [sys.executable, *serve_args(cli_imported_notes)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(request.encode() + b"\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        assert answer["result"]["serverInfo"]["name"] == "knowledge-mcp"
        import fcntl

        assert fcntl.fcntl(process.stdout.fileno(), fcntl.F_GETPIPE_SZ) == PIPE_BYTES
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            process.wait()


class _Node:
    """A cycle's member: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_serving_freezes_what_was_built_collects_less_often_and_leaves_as_it_found() -> None:
    before = gc.get_threshold()
    built = {"server": [1, 2, 3]}
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_OBJECTS, *before[1:])
        assert gc.get_freeze_count() > 0
        assert not any(obj is built for obj in gc.get_objects())  # left out of the walks
        cycle = _Node()
        gone = weakref.ref(cycle)
        del cycle
        gc.collect()
        assert gone() is None  # what the server makes while serving is still collected
    assert gc.get_threshold() == before
    assert any(obj is built for obj in gc.get_objects())
