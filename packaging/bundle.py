"""`make bundle`: the Claude Desktop extension, `dist/knowledge-mcp-<version>.mcpb`.

An MCPB bundle (manifest 0.4, server type `uv`): the host manages Python and installs the
dependencies from the bundle's pyproject.toml, so one bundle serves macOS, Windows and Linux,
whatever compiled wheels (numpy, onnxruntime) each needs. The bundle carries the wheel
`make dist` built and depends on it with the `semantic` extra. Staged in build/bundle/:

- manifest.json: packaging/mcpb/manifest.json with the version of pyproject.toml and the
  tools the server publishes by default (listed from the real server over stdio);
- src/server.py: the entry point (packaging/mcpb/server.py);
- pyproject.toml: `knowledge-mcp-server[semantic]` from wheels/<the wheel>;

then validated and packed with the official CLI (`mcpb validate`, `mcpb pack`, pinned in
.ci/mcpb/package-lock.json). Usage: python packaging/bundle.py --dist DIR --mcpb CLI
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "packaging" / "mcpb"
STAGE = ROOT / "build" / "bundle"
DISTRIBUTION = "knowledge-mcp-server"

BUNDLE_PYPROJECT = """\
# The environment the host creates for this extension (`uv run`): the server's wheel, shipped
# beside this file, with semantic search.
[project]
name = "knowledge-mcp-extension"
version = "{version}"
requires-python = ">=3.11"
dependencies = ["{distribution}[semantic]"]

[tool.uv]
package = false

[tool.uv.sources]
{distribution} = {{ path = "wheels/{wheel}" }}
"""


def project_version() -> str:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return str(data["project"]["version"])


def find_wheel(dist: Path, version: str) -> Path:
    wheel = dist / f"{DISTRIBUTION.replace('-', '_')}-{version}-py3-none-any.whl"
    if not wheel.is_file():
        raise SystemExit(f"bundle: {wheel} is missing; run `make dist` first")
    return wheel


async def published_tools() -> list[dict[str, str]]:
    """The default tool list of the real server: name and the first paragraph of its description."""
    with tempfile.TemporaryDirectory(prefix="knowledge-mcp-bundle-") as data_dir:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "knowledge_mcp", "serve", "--transport", "stdio", "--data-dir", data_dir],
            env={"KNOWLEDGE_MCP_EMBED_IN_BACKGROUND": "false", "KNOWLEDGE_MCP_LOG_LEVEL": "WARNING"},
        )
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
    return [
        {"name": t.name, "description": " ".join((t.description or t.name).split("\n\n")[0].split())}
        for t in tools
    ]


def stage(wheel: Path, version: str, tools: list[dict[str, str]]) -> Path:
    shutil.rmtree(STAGE, ignore_errors=True)
    (STAGE / "src").mkdir(parents=True)
    (STAGE / "wheels").mkdir()
    manifest: dict[str, Any] = json.loads((TEMPLATE / "manifest.json").read_text(encoding="utf-8"))
    manifest["version"] = version
    manifest["tools"] = tools
    (STAGE / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    shutil.copy2(TEMPLATE / "server.py", STAGE / "src" / "server.py")
    shutil.copy2(wheel, STAGE / "wheels" / wheel.name)
    pyproject = BUNDLE_PYPROJECT.format(version=version, distribution=DISTRIBUTION, wheel=wheel.name)
    (STAGE / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    return STAGE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="where make dist put the wheel")
    parser.add_argument("--mcpb", type=Path, required=True, help="the mcpb CLI")
    args = parser.parse_args()
    version = project_version()
    wheel = find_wheel(args.dist, version)
    staged = stage(wheel, version, anyio.run(published_tools))
    mcpb = str(args.mcpb.resolve())
    subprocess.run([mcpb, "validate", str(staged / "manifest.json")], check=True)
    out = args.dist.resolve() / f"knowledge-mcp-{version}.mcpb"
    subprocess.run([mcpb, "pack", str(staged), str(out)], check=True)
    print(f"bundle: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
