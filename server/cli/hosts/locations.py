"""The MCP hosts `knowledge-mcp setup` writes to: where each keeps its MCP servers, per OS, and
the server entry that starts this install over stdio.

Every host here keeps a JSON object whose `mcpServers` maps a name to
`{"command", "args", "env"?}`:

- Claude Desktop: `claude_desktop_config.json` in `~/Library/Application Support/Claude/`
  (macOS), `%APPDATA%\\Claude\\` (Windows), `$XDG_CONFIG_HOME/Claude/` (Linux builds);
- Claude Code: user scope, the top-level `mcpServers` of `~/.claude.json` (beside much else
  Claude Code keeps there; `$CLAUDE_CONFIG_DIR/.claude.json` when that is set), each entry with
  `"type": "stdio"` — what `claude mcp add --scope user` writes;
- Cursor: `~/.cursor/mcp.json` (global), on every OS.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SERVER_NAME = "knowledge"
"""The entry's default name in a host's `mcpServers`."""


@dataclass(frozen=True)
class Host:
    name: str
    title: str
    stdio_type: bool  # the entry carries "type": "stdio" (Claude Code)


HOSTS: dict[str, Host] = {
    h.name: h
    for h in (
        Host("claude-desktop", "Claude Desktop", False),
        Host("claude-code", "Claude Code", True),
        Host("cursor", "Cursor", False),
    )
}


def config_path(
    host: str,
    platform: str | None = None,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Path:
    """Where `host` keeps its MCP servers on `platform` (`sys.platform` by default)."""
    platform = platform or sys.platform
    env = os.environ if env is None else env
    home = home or Path.home()
    if host == "claude-desktop":
        if platform == "darwin":
            return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
        if platform == "win32":
            appdata = env.get("APPDATA") or str(home / "AppData" / "Roaming")
            return Path(appdata) / "Claude" / "claude_desktop_config.json"
        config = env.get("XDG_CONFIG_HOME") or str(home / ".config")
        return Path(config) / "Claude" / "claude_desktop_config.json"
    if host == "claude-code":
        folder = env.get("CLAUDE_CONFIG_DIR")
        return (Path(folder) if folder else home) / ".claude.json"
    if host == "cursor":
        return home / ".cursor" / "mcp.json"
    raise KeyError(host)


def launcher(argv0: str | None = None) -> list[str]:
    """The absolute command that starts this install: the running `knowledge-mcp` script, else the
    one on PATH, else this Python with `-m knowledge_mcp` (run as `python -m knowledge_mcp`)."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    for candidate in (argv0, f"{argv0}.exe") if os.name == "nt" else (argv0,):
        if Path(candidate).stem == "knowledge-mcp" and Path(candidate).is_file():
            return [os.path.abspath(candidate)]  # not resolved: a pipx shim stays the shim
    found = shutil.which("knowledge-mcp")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "knowledge_mcp"]


def ephemeral(command: list[str]) -> bool:
    """Whether `command` runs from a throw-away environment (`uvx`'s cache: `uv cache clean`
    or an upgrade removes it, and the host's entry would then start nothing)."""
    parts = Path(command[0]).parts
    return any(p.startswith("archive-v") for p in parts) and any(p in ("uv", ".uv") for p in parts)


def server_entry(host: str | None, command: list[str], data_dir: Path | None) -> dict[str, Any]:
    """The `mcpServers` entry for `host` (None: a host we do not know, which gets the plain form)."""
    args = [*command[1:], "serve", "--transport", "stdio"]
    if data_dir is not None:
        args += ["--data-dir", str(data_dir)]
    entry: dict[str, Any] = {"command": command[0], "args": args}
    if host in HOSTS and HOSTS[host].stdio_type:
        entry = {"type": "stdio", **entry}
    return entry


def points_here(entry: Any, command: list[str]) -> bool:
    """Whether a host's entry starts this install (same command, and `-m knowledge_mcp` if so)."""
    if not isinstance(entry, dict) or entry.get("command") != command[0]:
        return False
    args = entry.get("args")
    return isinstance(args, list) and args[: len(command) - 1] == command[1:]
