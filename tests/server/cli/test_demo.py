"""`knowledge-mcp demo` and `make demo` run end to end as real processes, as a newcomer runs them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).with_name("knowledge-mcp"))


def assert_clean_demo_run(result: subprocess.CompletedProcess[str]) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "Traceback" not in output, output[-4000:]
    assert "demo done" in result.stdout
    # every step printed its panel: the budgeted read and the bad call's one-sentence error
    assert "notes_get(mode=chunk_with_siblings, max_tokens=250)" in result.stdout
    assert "a bad call: notes_search(limit=1000)" in result.stdout


def test_the_demo_command_runs_every_step_without_a_traceback() -> None:
    result = subprocess.run([CLI, "demo"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert_clean_demo_run(result)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.skipif(
    not (ROOT / ".venv" / "bin" / "knowledge-mcp").exists(), reason="make demo runs the repository's .venv"
)
def test_make_demo_runs_every_step_without_a_traceback() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    result = subprocess.run(
        ["make", "-s", "demo"], capture_output=True, text=True, timeout=600, cwd=ROOT, env=env
    )
    assert_clean_demo_run(result)
