"""The house rules of the repository (DESIGN §1): one installed namespace, small modules,
small package roots, nothing of the benchmark inside the server, and only the product shipped
(experiments stay in the clone)."""

from __future__ import annotations

import ast
import runpy
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import setuptools

from .import_graph import import_graph, reachable

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("server", "sources", "aggregator", "bench")
CHECKED = (*PACKAGES, "experiments")  # the size rules hold for what is not shipped too
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
    return next(out.glob("knowledge_mcp_server-*.whl"))


def test_the_wheel_installs_one_namespace_with_every_module(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"knowledge_mcp"}
    assert not [n for n in names if "experiments" in n.split("/")]
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


@pytest.mark.parametrize("package", CHECKED)
def test_no_module_is_over_the_size_limit(package: str) -> None:
    sizes = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in _python_files(ROOT / package)}
    too_long = {str(p.relative_to(ROOT)): n for p, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not too_long, f"split these by concept: {too_long}"


@pytest.mark.parametrize("package", CHECKED)
def test_no_package_root_holds_more_than_ten_modules(package: str) -> None:
    folders = [ROOT / package, *(p.parent for p in (ROOT / package).rglob("__init__.py"))]
    crowded = {
        str(f.relative_to(ROOT)): n for f in folders if (n := len(list(f.glob("*.py")))) > MAX_ROOT_MODULES
    }
    assert not crowded, f"split these into subpackages: {crowded}"


def test_no_benchmark_code_sits_in_the_server_package() -> None:
    server = _python_files(ROOT / "server")
    assert not [p for p in server if "bench" in p.name or p.name == "evaluation.py"]


def _imports_of(path: Path, package: str) -> set[str]:
    """The knowledge_mcp packages a module imports (absolute, or relative and resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = [package, *path.relative_to(ROOT / package).with_suffix("").parts]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = module[: len(module) - node.level]
            found.add(".".join([*base, *(node.module or "").split(".")]).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("knowledge_mcp."):
            found.add((node.module or "").split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("knowledge_mcp.")}
    return found - {package}


@pytest.mark.parametrize(
    ("package", "allowed"),
    [("sources", set()), ("aggregator", {"sources"}), ("server", {"aggregator", "sources", "bench"})],
)
def test_imports_point_one_way(package: str, allowed: set[str]) -> None:
    """server → aggregator → sources (the CLI alone reaches bench, for its bench and eval verbs)."""
    wrong = {
        str(path.relative_to(ROOT)): outside
        for path in _python_files(ROOT / package)
        if (outside := _imports_of(path, package) - allowed - {"__future__"})
    }
    assert not wrong, wrong
    reaching_bench = [p for p in _python_files(ROOT / package) if "bench" in _imports_of(p, package)]
    assert all(p.parent.name == "cli" for p in reaching_bench), reaching_bench


def _installed_modules(monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Every module setup.py would install (its packages' files), by dotted name; setup.py is
    run with `setuptools.setup` recording its arguments instead of building anything."""
    recorded: dict[str, Any] = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: recorded.update(kw))
    monkeypatch.chdir(ROOT)
    runpy.run_path(str(ROOT / "setup.py"))
    folders: dict[str, str] = recorded["package_dir"]
    modules: dict[str, Path] = {}
    for package in recorded["packages"]:
        top = ".".join(package.split(".")[:2])
        folder = ROOT / folders[top] / Path(*package.split(".")[2:])
        for path in folder.glob("*.py"):
            modules[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return modules


def test_no_experiment_module_would_be_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    installed = _installed_modules(monkeypatch)
    assert installed, "setup.py installs nothing?"
    inside = [name for name, path in installed.items() if (ROOT / "experiments") in path.parents]
    assert not inside, inside


def test_every_installed_bench_module_is_one_a_cli_verb_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """What `bench`/`eval` import (inside functions too), and their packages; anything else in
    `bench/` is an experiment and belongs in `experiments/`, which is not installed."""
    graph = import_graph(ROOT, PACKAGES)
    used = reachable(graph, [m for m in graph if not m.startswith("knowledge_mcp.bench")])
    shipped = {m for m in _installed_modules(monkeypatch) if m.startswith("knowledge_mcp.bench.")}
    assert shipped & used, "no bench module reached from the CLI: is the import graph empty?"
    assert not shipped - used, "move to experiments/: " + ", ".join(sorted(shipped - used))
