"""The install tests' shared work, done once per run: `make dist` into a temporary folder, and
the packed `.mcpb` built from that wheel (see packaging/bundle.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from knowledge_mcp import DISTRIBUTION
from tests.conftest import ROOT

BIN = Path(sys.executable).parent
"""The test venv's scripts: uv, uvx and pipx come from the `dev` extra."""
MCPB = ROOT / ".ci" / "mcpb" / "node_modules" / ".bin" / "mcpb"


@dataclass(frozen=True)
class Dist:
    folder: Path
    wheel: Path
    sdist: Path
    version: str


def tool_env(**extra: str) -> dict[str, str]:
    """The environment of an installed command: the test venv's tools (uv) first on PATH, and
    no background embedding (it would race the tests' reads and load every CPU)."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["KNOWLEDGE_MCP_EMBED_IN_BACKGROUND"] = "false"
    env.pop("VIRTUAL_ENV", None)
    env.update(extra)
    return env


def make(*args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    result = subprocess.run(
        ["make", "-s", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """`make dist` (wheel and sdist), into a temporary folder rather than the checkout's dist/."""
    folder = tmp_path_factory.mktemp("dist")
    make("dist", f"DIST={folder}")
    stem = DISTRIBUTION.replace("-", "_")
    (wheel,) = folder.glob(f"{stem}-*-py3-none-any.whl")
    (sdist,) = folder.glob(f"{stem}-*.tar.gz")
    version = wheel.name.split("-")[1]
    return Dist(folder, wheel, sdist, version)


@pytest.fixture(scope="session")
def bundle(dist: Dist) -> Path:
    """The `.mcpb` of `make bundle`, built from the `dist` wheel with the pinned mcpb CLI."""
    if shutil.which("npm") is None and not MCPB.exists():
        if os.environ.get("CI"):
            pytest.fail("make bundle needs npm (the official mcpb CLI is an npm package)")
        pytest.skip("make bundle needs npm (the official mcpb CLI is an npm package)")
    make(str(MCPB.relative_to(ROOT)))
    result = subprocess.run(
        [sys.executable, "packaging/bundle.py", "--dist", str(dist.folder), "--mcpb", str(MCPB)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return dist.folder / f"knowledge-mcp-{dist.version}.mcpb"
