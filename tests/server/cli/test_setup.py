"""`knowledge-mcp setup HOST` writes a host's MCP config the way a user would want it edited:
merged, backed up, idempotent, never over someone else's server, and it starts for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from knowledge_mcp.server.cli.hosts.locations import config_path, ephemeral, points_here, server_entry
from tests.conftest import ROOT

CLI = str(Path(sys.executable).with_name("knowledge-mcp"))


def setup(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if home is not None:
        env["HOME"] = str(home)
        for name in ("XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "APPDATA"):
            env.pop(name, None)
    return subprocess.run(
        [CLI, "setup", *args], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env
    )


def backups(config: Path) -> list[Path]:
    return sorted(config.parent.glob(f"{config.name}.*.bak"))


OTHER = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A Claude Desktop config that already holds another server and a setting of its own."""
    path = tmp_path / "Claude" / "claude_desktop_config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"mcpServers": {"memory": OTHER}, "globalShortcut": "Ctrl+Space"}), "utf-8")
    return path


def test_a_second_setup_changes_nothing_and_makes_no_new_backup(config: Path, tmp_path: Path) -> None:
    first = setup("claude-desktop", "--config-path", str(config), "--data-dir", str(tmp_path / "data"))
    assert first.returncode == 0, first.stderr
    assert "added 'knowledge'" in first.stdout
    written, stat = config.read_bytes(), config.stat()
    assert len(backups(config)) == 1

    second = setup("claude-desktop", "--config-path", str(config), "--data-dir", str(tmp_path / "data"))
    assert second.returncode == 0, second.stderr
    assert "nothing changed" in second.stdout
    assert config.read_bytes() == written and config.stat().st_mtime_ns == stat.st_mtime_ns
    assert len(backups(config)) == 1


def test_the_existing_servers_and_settings_are_kept_and_the_old_file_is_backed_up(
    config: Path, tmp_path: Path
) -> None:
    before = config.read_text("utf-8")
    done = setup("claude-desktop", "--config-path", str(config), "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    written = json.loads(config.read_text("utf-8"))
    assert written["mcpServers"]["memory"] == OTHER
    assert written["globalShortcut"] == "Ctrl+Space"
    assert written["mcpServers"]["knowledge"] == {
        "command": CLI,
        "args": ["serve", "--transport", "stdio", "--data-dir", str((tmp_path / "data").resolve())],
    }
    assert [b.read_text("utf-8") for b in backups(config)] == [before]
    assert str(backups(config)[0]) in done.stdout


def test_a_different_server_of_the_same_name_is_refused_without_force(config: Path) -> None:
    before = config.read_text("utf-8")
    refused = setup("claude-desktop", "--config-path", str(config), "--name", "memory")
    assert refused.returncode == 1
    assert "--force" in refused.stderr and "'memory'" in refused.stderr and "npx" in refused.stderr
    assert config.read_text("utf-8") == before and not backups(config)

    forced = setup("claude-desktop", "--config-path", str(config), "--name", "memory", "--force")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(config.read_text("utf-8"))["mcpServers"]["memory"]["command"] == CLI
    assert [b.read_text("utf-8") for b in backups(config)] == [before]


def test_this_install_s_entry_is_updated_in_place_keeping_what_the_user_added(config: Path) -> None:
    assert setup("claude-desktop", "--config-path", str(config)).returncode == 0
    data = json.loads(config.read_text("utf-8"))
    data["mcpServers"]["knowledge"]["env"] = {"KNOWLEDGE_MCP_TOOL_PROFILE": "compact"}
    config.write_text(json.dumps(data), "utf-8")

    moved = setup("claude-desktop", "--config-path", str(config), "--data-dir", "/srv/knowledge")
    assert moved.returncode == 0, moved.stderr
    assert "updated 'knowledge'" in moved.stdout
    entry = json.loads(config.read_text("utf-8"))["mcpServers"]["knowledge"]
    assert entry["args"][-2:] == ["--data-dir", str(Path("/srv/knowledge").resolve())]
    assert entry["env"] == {"KNOWLEDGE_MCP_TOOL_PROFILE": "compact"}


def test_a_config_that_is_not_json_is_left_alone_with_the_reason(config: Path) -> None:
    config.write_text('{"mcpServers": {"memory": ', "utf-8")
    refused = setup("claude-desktop", "--config-path", str(config))
    assert refused.returncode == 1
    assert "not valid JSON" in refused.stderr and "--print" in refused.stderr
    assert config.read_text("utf-8") == '{"mcpServers": {"memory": ' and not backups(config)


def test_without_config_path_each_host_s_own_file_is_written_under_home(tmp_path: Path) -> None:
    for host in ("claude-desktop", "claude-code", "cursor"):
        done = setup(host, home=tmp_path)
        assert done.returncode == 0, done.stderr
    desktop = tmp_path / ".config" / "Claude" / "claude_desktop_config.json"
    if sys.platform == "darwin":
        desktop = tmp_path / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    code = json.loads((tmp_path / ".claude.json").read_text("utf-8"))["mcpServers"]["knowledge"]
    cursor = json.loads((tmp_path / ".cursor" / "mcp.json").read_text("utf-8"))["mcpServers"]["knowledge"]
    assert json.loads(desktop.read_text("utf-8"))["mcpServers"]["knowledge"]["command"] == CLI
    assert code == {"type": "stdio", "command": CLI, "args": ["serve", "--transport", "stdio"]}
    assert cursor == {"command": CLI, "args": ["serve", "--transport", "stdio"]}


def test_print_writes_nothing_and_gives_the_snippet_for_any_host(tmp_path: Path) -> None:
    printed = setup("zed", "--print", "--data-dir", str(tmp_path / "data"), home=tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout) == {
        "mcpServers": {
            "knowledge": {
                "command": CLI,
                "args": ["serve", "--transport", "stdio", "--data-dir", str((tmp_path / "data").resolve())],
            }
        }
    }
    assert not list(tmp_path.rglob("*.json"))


def test_an_unknown_host_without_print_names_the_hosts_and_the_way_out(tmp_path: Path) -> None:
    refused = setup("zed", home=tmp_path)
    assert refused.returncode == 1
    assert "claude-desktop, claude-code, cursor" in refused.stderr and "--print" in refused.stderr


@pytest.mark.parametrize(
    ("host", "platform", "env", "expected"),
    [
        ("claude-desktop", "darwin", {}, "H/Library/Application Support/Claude/claude_desktop_config.json"),
        ("claude-desktop", "win32", {"APPDATA": "A"}, "A/Claude/claude_desktop_config.json"),
        ("claude-desktop", "win32", {}, "H/AppData/Roaming/Claude/claude_desktop_config.json"),
        ("claude-desktop", "linux", {}, "H/.config/Claude/claude_desktop_config.json"),
        ("claude-desktop", "linux", {"XDG_CONFIG_HOME": "X"}, "X/Claude/claude_desktop_config.json"),
        ("claude-code", "linux", {}, "H/.claude.json"),
        ("claude-code", "win32", {"CLAUDE_CONFIG_DIR": "C"}, "C/.claude.json"),
        ("cursor", "darwin", {}, "H/.cursor/mcp.json"),
        ("cursor", "win32", {}, "H/.cursor/mcp.json"),
    ],
)
def test_each_host_keeps_its_config_where_that_host_looks_on_each_os(
    host: str, platform: str, env: dict[str, str], expected: str
) -> None:
    assert config_path(host, platform, env, Path("H")) == Path(expected)


def test_the_entry_a_host_is_given_starts_a_server_that_lists_the_tools(tmp_path: Path) -> None:
    entry: dict[str, Any] = server_entry("claude-desktop", [CLI], tmp_path / "data")
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=dict(os.environ))

    async def tools() -> list[str]:
        with anyio.fail_after(60):
            async with Client(params) as client:
                return [t.name for t in (await client.list_tools()).tools]

    assert "knowledge_search" in anyio.run(tools)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("/home/me/.cache/uv/archive-v0/AbC123/bin/knowledge-mcp", True),
        ("C:/Users/me/AppData/Local/uv/cache/archive-v0/AbC123/Scripts/knowledge-mcp.exe", True),
        ("/home/me/.local/share/uv/tools/knowledge-mcp/bin/knowledge-mcp", False),
        ("/home/me/.local/bin/knowledge-mcp", False),
    ],
)
def test_a_command_in_uvx_s_cache_is_recognised_as_throw_away(command: str, expected: bool) -> None:
    assert ephemeral([command]) is expected


def test_run_as_python_m_the_entry_starts_this_python_with_the_module() -> None:
    command = ["/opt/py/bin/python3", "-m", "knowledge_mcp"]
    entry = server_entry("cursor", command, None)
    assert entry == {"command": command[0], "args": ["-m", "knowledge_mcp", "serve", "--transport", "stdio"]}
    assert points_here(entry, command)
    assert not points_here({"command": command[0], "args": ["-m", "other"]}, command)
