"""The built wheel, installed as users install it and driven over stdio by the MCP client: into
a fresh virtual environment with the `semantic` extra, with `uvx --from`, and with `pipx`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from mcp import StdioServerParameters

from knowledge_mcp import DISTRIBUTION
from tests.conftest import FIXTURES

from .conftest import BIN, Dist, tool_env
from .stdio import search_and_get

pytestmark = [pytest.mark.slow, pytest.mark.install, pytest.mark.anyio]

QUERY = "sourdough levain"
ELSEWHERE = tempfile.gettempdir()
"""The commands run outside the checkout, whose knowledge_mcp/ folder would shadow the install."""
TITLE = "Sourdough Country Loaf"


def run(*command: str | Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(c) for c in command],
        capture_output=True,
        text=True,
        timeout=900,
        env=env or tool_env(),
        cwd=ELSEWHERE,
    )
    assert result.returncode == 0, f"{command}: {result.stdout[-2000:]}{result.stderr[-3000:]}"
    return result.stdout


def import_notes(cli: list[str], data_dir: Path, *extra: str) -> None:
    run(*cli, "import", "notes", FIXTURES / "notes", "--data-dir", data_dir, *extra)


async def assert_serves_the_notes(cli: list[str], data_dir: Path) -> None:
    params = StdioServerParameters(
        command=cli[0],
        args=[*cli[1:], "serve", "--transport", "stdio", "--data-dir", str(data_dir)],
        env=tool_env(),
        cwd=ELSEWHERE,
    )
    session = await search_and_get(params, QUERY)
    assert {"notes_search", "notes_get", "knowledge_search", "knowledge_get"} <= set(session.tools)
    assert session.hits and session.hits[0]["title"] == TITLE
    assert "levain" in session.text.lower()


def test_the_wheel_and_sdist_carry_the_distribution_name_and_both_commands(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as wheel:
        info = f"{DISTRIBUTION.replace('-', '_')}-{dist.version}.dist-info"
        metadata = wheel.read(f"{info}/METADATA").decode()
        scripts = wheel.read(f"{info}/entry_points.txt").decode()
    assert f"Name: {DISTRIBUTION}\n" in metadata
    assert "Provides-Extra: semantic" in metadata
    assert "knowledge-mcp = knowledge_mcp.server.cli:main" in scripts
    assert f"{DISTRIBUTION} = knowledge_mcp.server.cli:main" in scripts
    assert dist.sdist.stat().st_size > 0


async def test_the_wheel_in_a_fresh_venv_with_semantic_search_serves_the_fixtures_over_stdio(
    dist: Dist, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    run(BIN / "uv", "pip", "install", "--python", venv / "bin" / "python", f"{dist.wheel}[semantic]")
    cli = [str(venv / "bin" / "knowledge-mcp")]
    assert run(*cli, "--version").split() == ["knowledge-mcp", dist.version]
    where = run(venv / "bin" / "python", "-c", "import knowledge_mcp.server.app as m; print(m.__file__)")
    assert where.startswith(str(venv)), "the wheel is installed, not the checkout (editable)"
    import_notes(cli, tmp_path / "data")
    await assert_serves_the_notes(cli, tmp_path / "data")

    # the demo runs from the wheel: the sample data is installed with it
    demo = run(*cli, "demo")
    assert "demo done" in demo and "notes_get(mode=chunk_with_siblings" in demo
    assert re.search(r"^notes\s+[1-9]\d* items added", demo, re.MULTILINE), demo

    # the semantic extra works: vectors computed for a small folder make a search hybrid
    small = tmp_path / "small"
    small.mkdir()
    (small / "bread.md").write_text("# Bread\n\nA slow cold proof gives the loaf a sour tang.\n")
    (small / "bikes.md").write_text("# Bikes\n\nOil the chain after a wet ride.\n")
    import_notes_dir = [*cli, "import", "notes", small, "--embed", "--data-dir", tmp_path / "sem"]
    run(*import_notes_dir)
    found = json.loads(run(*cli, "search", "leavened dough", "--json", "--data-dir", tmp_path / "sem"))
    assert found["results"] and found["results"][0]["score_type"] == "hybrid", found


async def test_uvx_from_the_wheel_serves_the_fixtures_over_stdio(dist: Dist, tmp_path: Path) -> None:
    cli = [str(BIN / "uvx"), "--from", str(dist.wheel), "knowledge-mcp"]
    import_notes(cli, tmp_path / "data")
    await assert_serves_the_notes(cli, tmp_path / "data")


async def test_pipx_install_of_the_wheel_serves_the_fixtures_over_stdio(dist: Dist, tmp_path: Path) -> None:
    home = tmp_path / "pipx"
    env = tool_env(
        PIPX_HOME=str(home / "home"), PIPX_BIN_DIR=str(home / "bin"), PIPX_MAN_DIR=str(home / "man")
    )
    run(BIN / "pipx", "install", dist.wheel, env=env)
    cli = [str(home / "bin" / "knowledge-mcp")]
    assert run(*cli, "--version", env=env).split() == ["knowledge-mcp", dist.version]
    import_notes(cli, tmp_path / "data")
    await assert_serves_the_notes(cli, tmp_path / "data")
