"""`server.json` for the official MCP registry: valid against the registry's schema (kept in
packaging/registry/), and in step with the package it points at."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

import jsonschema

from knowledge_mcp import DISTRIBUTION
from knowledge_mcp.server.config import ENV_PREFIX, Settings
from tests.conftest import ROOT

SCHEMA = json.loads((ROOT / "packaging" / "registry" / "server.schema.json").read_text(encoding="utf-8"))
SERVER = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def schema_errors(document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def test_server_json_is_valid_against_the_registry_schema() -> None:
    assert schema_errors(SERVER) == []


def test_the_schema_check_rejects_a_name_outside_the_registry_namespace_form() -> None:
    # the validator really reads the schema: a broken document does not pass
    assert schema_errors({**SERVER, "name": "knowledge-mcp"}) != []
    assert schema_errors({k: v for k, v in SERVER.items() if k != "version"}) != []


def test_server_json_points_at_this_distribution_and_version() -> None:
    assert SERVER["version"] == PROJECT["version"]
    assert {p["registryType"] for p in SERVER["packages"]} == {"pypi"}
    for package in SERVER["packages"]:
        assert package["identifier"] == PROJECT["name"] == DISTRIBUTION
        assert package["version"] == PROJECT["version"]


def test_server_json_offers_stdio_and_streamable_http() -> None:
    transports = {p["transport"]["type"] for p in SERVER["packages"]}
    assert transports == {"stdio", "streamable-http"}


def test_every_environment_variable_in_server_json_is_a_setting_of_the_server() -> None:
    names = {v["name"] for p in SERVER["packages"] for v in p.get("environmentVariables", [])}
    settings = {ENV_PREFIX + field.upper() for field in Settings.model_fields} | {ENV_PREFIX + "CONFIG"}
    assert names and names <= settings, sorted(names - settings)


def test_the_readme_carries_the_registry_ownership_marker() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(rf"^mcp-name: {re.escape(SERVER['name'])}$", readme, re.MULTILINE) or (
        f"<!-- mcp-name: {SERVER['name']} -->" in readme
    )
