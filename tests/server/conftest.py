"""Fixtures for the end-to-end server tests: one data dir imported by the real CLI, shared read-only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT


@pytest.fixture(scope="session")
def cli_imported_notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding the notes fixtures, imported by `python -m server import` in its own process."""
    data_dir = tmp_path_factory.mktemp("e2e") / "data"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "knowledge_mcp",
            "import",
            "notes",
            str(FIXTURES / "notes"),
            "--data-dir",
            str(data_dir),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] > 0
    return data_dir
