"""The Claude Desktop extension: `make bundle`'s `.mcpb`, unpacked and started exactly as its
manifest says (command, arguments, environment, with the host's substitutions), lists its tools
over stdio and serves the notes folder the user chose."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters

from tests.conftest import FIXTURES, ROOT

from .conftest import tool_env
from .stdio import search_and_get

pytestmark = [pytest.mark.slow, pytest.mark.install, pytest.mark.anyio]


def unpack(bundle: Path, into: Path) -> dict[str, Any]:
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(into)
    manifest: dict[str, Any] = json.loads((into / "manifest.json").read_text(encoding="utf-8"))
    return manifest


def substitute(value: str, dirname: Path, choices: dict[str, str]) -> str:
    """What the host does to mcp_config strings (MANIFEST.md, "Variable Substitution")."""
    value = value.replace("${__dirname}", str(dirname))
    for key, choice in choices.items():
        value = value.replace("${user_config." + key + "}", choice)
    return value


def as_the_host_starts_it(manifest: dict[str, Any], dirname: Path, choices: dict[str, str]) -> Any:
    config = manifest["server"]["mcp_config"]
    env = {k: substitute(v, dirname, choices) for k, v in config.get("env", {}).items()}
    command = shutil.which(config["command"], path=tool_env()["PATH"])
    assert command, f"{config['command']} is not on PATH"
    return StdioServerParameters(
        command=command,
        args=[substitute(a, dirname, choices) for a in config.get("args", [])],
        # the host's environment (uv on PATH; no background embedding in tests) plus the manifest's
        env={**tool_env(), **env},
        cwd=dirname.parent,
    )


def test_the_manifest_declares_the_uv_server_its_options_and_this_version(
    bundle: Path, tmp_path: Path
) -> None:
    manifest = unpack(bundle, tmp_path / "ext")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert manifest["version"] == version
    assert manifest["server"]["type"] == "uv"
    assert (tmp_path / "ext" / manifest["server"]["entry_point"]).is_file()
    assert (tmp_path / "ext" / "pyproject.toml").is_file()
    options = manifest["user_config"]
    assert options["notes_dir"]["type"] == options["data_dir"]["type"] == "directory"
    assert set(manifest["compatibility"]["platforms"]) == {"darwin", "win32", "linux"}
    # the wheel inside is the one the pyproject installs
    (wheel,) = (tmp_path / "ext" / "wheels").glob("*.whl")
    assert wheel.name in (tmp_path / "ext" / "pyproject.toml").read_text(encoding="utf-8")


async def test_the_unpacked_bundle_started_as_the_manifest_says_lists_its_tools_and_serves_the_notes(
    bundle: Path, tmp_path: Path
) -> None:
    ext = tmp_path / "ext"
    manifest = unpack(bundle, ext)
    notes = tmp_path / "vault"
    shutil.copytree(FIXTURES / "notes", notes)
    choices = {"notes_dir": str(notes), "data_dir": str(tmp_path / "data")}
    session = await search_and_get(as_the_host_starts_it(manifest, ext, choices), "sourdough levain")
    assert session.tools == [tool["name"] for tool in manifest["tools"]]
    assert session.hits and session.hits[0]["title"] == "Sourdough Country Loaf"
    assert "levain" in session.text.lower()
    assert (tmp_path / "data" / "users").is_dir(), "the data folder the user chose is the one used"


async def test_options_left_empty_fall_back_to_the_server_defaults(bundle: Path, tmp_path: Path) -> None:
    ext = tmp_path / "ext"
    manifest = unpack(bundle, ext)
    params = as_the_host_starts_it(manifest, ext, {"notes_dir": "", "data_dir": ""})
    # the default data folder (XDG on Linux), moved into the test's folder
    params.env = {**(params.env or {}), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    session = await search_and_get(params, "sourdough")
    assert session.tools == [tool["name"] for tool in manifest["tools"]]
    assert session.hits == []
    assert not (ext / "${user_config.data_dir}").exists() and not (ext.parent / "users").exists()
    assert os.listdir(tmp_path / "xdg" / "knowledge-mcp")
