"""`knowledge-mcp import` starts light: the MCP SDK (about a second of start-up) is never loaded
by a command that does not serve MCP (docs/performance.md, "Lazy imports")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES


def test_an_import_never_loads_the_mcp_sdk(tmp_path: Path) -> None:
    argv = ["import", "notes", str(FIXTURES / "notes"), "--data-dir", str(tmp_path), "--json"]
    script = (
        "import contextlib, io, json, sys\n"
        "from knowledge_mcp.server.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    code = main({argv!r})\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types'))\n"
        "print(json.dumps({'code': code, 'added': json.loads(out.getvalue())['added'], 'mcp': loaded}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["code"] == 0 and result["added"] > 0
    assert result["mcp"] == []
