"""The house rules of the repository (DESIGN §1): one installed namespace, small modules,
small package roots, and nothing of the benchmark inside the server."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("server", "sources", "aggregator", "bench")
MAX_MODULE_LINES = 400
MAX_ROOT_MODULES = 10


def _python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    return next(out.glob("knowledge_mcp-*.whl"))


def test_the_wheel_installs_one_namespace_with_every_module(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"knowledge_mcp"}
    for package in PACKAGES:
        for path in _python_files(ROOT / package):
            assert f"knowledge_mcp/{path.relative_to(ROOT).as_posix()}" in names


def test_an_installed_wheel_imports_as_knowledge_mcp_only(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"}

    def python(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True)

    found = python("-c", "import knowledge_mcp.server.app as m; print(m.__file__)")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith(str(target))
    for bare in PACKAGES:
        assert python("-c", f"import {bare}").returncode != 0
    usage = python("-m", "knowledge_mcp", "--help")
    assert usage.returncode == 0 and "usage: knowledge-mcp" in usage.stdout


def test_the_console_script_starts_the_cli() -> None:
    script = Path(sys.executable).parent / "knowledge-mcp"
    usage = subprocess.run([str(script), "--help"], capture_output=True, text=True)
    assert usage.returncode == 0 and "{serve,import,search" in usage.stdout
