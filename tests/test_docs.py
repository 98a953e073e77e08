"""The docs are part of the feature: every tool, setting and command is documented."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest

from knowledge_mcp.server.cli.dispatch import build_parser
from knowledge_mcp.server.config import Settings
from tests.conftest import ROOT

pytestmark = pytest.mark.anyio

README = (ROOT / "README.md").read_text(encoding="utf-8")


async def test_every_published_tool_is_in_the_readme_tools_table(client_factory: Any) -> None:
    async with client_factory() as client:
        names = [t.name for t in (await client.list_tools()).tools]
    table = set(re.findall(r"^\| `([a-z_.]+)` \|", README, re.MULTILINE))
    assert names, "the server publishes tools"
    assert set(names) <= table, f"undocumented tools: {sorted(set(names) - table)}"


async def test_every_tool_has_a_description_written_for_the_model(client_factory: Any) -> None:
    async with client_factory() as client:
        for tool in (await client.list_tools()).tools:
            # short (every host pays for it on every turn) but not a stub: what the tool does in
            # one sentence, then a paragraph on how to use it
            assert tool.description and len(tool.description) > 100, tool.name
            summary, *details = tool.description.split("\n\n")
            assert summary.endswith(".") and details and all(details), tool.name
            assert tool.title, tool.name


def test_every_setting_is_in_config_example() -> None:
    text = (ROOT / "config.example.toml").read_text(encoding="utf-8")
    documented = re.findall(r"^#?\s*([a-z_]+)\s*=", text, re.MULTILINE)
    missing = set(Settings.model_fields) - set(documented)
    assert not missing, f"settings missing from config.example.toml: {sorted(missing)}"


def test_config_example_is_valid_and_loads_as_the_defaults() -> None:
    data = tomllib.loads((ROOT / "config.example.toml").read_text(encoding="utf-8"))
    flat = {k: v for section in data.values() for k, v in section.items()}
    settings = Settings.model_validate(flat)
    defaults = Settings()
    for name in flat:
        assert getattr(settings, name) == getattr(defaults, name), name


def test_every_cli_command_is_in_the_readme() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert commands is not None
    for command in commands:
        assert f"knowledge-mcp {command}" in README or f"make {command}" in README, command


def test_readme_gives_the_two_command_quick_start() -> None:
    assert "make demo" in README and "make test" in README
