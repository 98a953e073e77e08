"""`knowledge-mcp import` starts light: the MCP SDK (about a second of start-up), numpy and the
search code are never loaded by a command that only imports (docs/performance.md, "Lazy imports")."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from knowledge_mcp.server.cli.commands import import_command
from knowledge_mcp.server.config import load_settings
from tests.conftest import FIXTURES

SEARCH_CODE = ("knowledge_mcp.sources.search", "knowledge_mcp.sources.reading")


def import_notes_in_a_fresh_process(data_dir: Path) -> dict[str, Any]:
    """Run `knowledge-mcp import notes` on the fixture notes in a new interpreter: its exit code,
    the items it added and the names of the modules loaded by the end."""
    argv = ["import", "notes", str(FIXTURES / "notes"), "--data-dir", str(data_dir), "--json"]
    script = (
        "import contextlib, io, json, sys\n"
        "from knowledge_mcp.server.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    code = main({argv!r})\n"
        "added = json.loads(out.getvalue())['added']\n"
        "print(json.dumps({'code': code, 'added': added, 'modules': sorted(sys.modules)}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["code"] == 0 and result["added"] > 0
    return result


def test_an_import_never_loads_the_mcp_sdk(tmp_path: Path) -> None:
    modules = import_notes_in_a_fresh_process(tmp_path)["modules"]
    assert [m for m in modules if m.split(".")[0] in ("mcp", "mcp_types")] == []


def test_an_import_never_loads_numpy_or_the_search_code(tmp_path: Path) -> None:
    modules = import_notes_in_a_fresh_process(tmp_path)["modules"]
    assert [m for m in modules if m.split(".")[0] == "numpy" or m.startswith(SEARCH_CODE)] == []


def test_an_import_of_notes_loads_no_other_source(tmp_path: Path) -> None:
    modules = import_notes_in_a_fresh_process(tmp_path)["modules"]
    others = ("media", "chats", "characters", "prompts")
    assert [m for m in modules if m.split(".")[:3] in (["knowledge_mcp", "sources", o] for o in others)] == []


def test_an_import_of_utf8_notes_never_loads_the_charset_detector_or_the_score_formatting(
    tmp_path: Path,
) -> None:
    modules = import_notes_in_a_fresh_process(tmp_path)["modules"]
    assert [m for m in modules if m.split(".")[0] == "charset_normalizer"] == []
    assert "knowledge_mcp.sources.wire" not in modules


def test_an_import_runs_on_asyncio_alone_without_loading_anyio(tmp_path: Path) -> None:
    modules = import_notes_in_a_fresh_process(tmp_path)["modules"]
    assert [m for m in modules if m.split(".")[0] == "anyio"] == []


def test_the_import_command_gives_the_collector_its_thresholds_back(tmp_path: Path) -> None:
    before = gc.get_threshold()
    summary = import_command(load_settings(None, data_dir=tmp_path), "notes", [FIXTURES / "notes"], False)
    assert summary.added > 0 and summary.files_failed == 0
    assert gc.get_threshold() == before
