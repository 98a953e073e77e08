"""Doctor: which MCP hosts start this install (and with which data dir), and host entries that
start a knowledge-mcp which is no longer there."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..hosts.locations import HOSTS, config_path, points_here
from .findings import Context, Finding


async def check_hosts(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    missing: list[str] = []
    for host in HOSTS:
        path = config_path(host)
        servers = _servers(path)
        if servers is None:
            missing.append(host)
            continue
        ours = [name for name, entry in servers.items() if points_here(entry, ctx.command)]
        stale = [name for name, entry in servers.items() if _stale(entry)]
        other = [n for n, e in servers.items() if _ours_by_name(e) and n not in ours and n not in stale]
        for name in ours:
            detail = f"{path} starts this install as {name!r}{_data_dir(servers[name], ctx)}"
            findings.append(Finding(host, detail))
        for name in stale:
            detail = f"{path}: {name!r} starts {servers[name]['command']}, which does not exist"
            findings.append(
                Finding(host, detail, "fail", f"knowledge-mcp setup {host} --name {name} --force")
            )
        for name in other:
            detail = f"{path}: {name!r} starts another install, {servers[name]['command']}"
            findings.append(
                Finding(host, detail, "note", f"knowledge-mcp setup {host} --name {name} --force")
            )
        if not ours and not stale and not other:
            missing.append(host)
    if missing:
        detail = f"not set up for {', '.join(missing)} (knowledge-mcp setup HOST)"
        findings.append(Finding("hosts", detail, "note"))
    return findings


def _servers(path: Path) -> dict[str, Any] | None:
    """The file's `mcpServers`, or None when there is no such file or it is not one we can read
    (a host's file is the host's business: setup says what is wrong with it)."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    servers = config.get("mcpServers") if isinstance(config, dict) else None
    return servers if isinstance(servers, dict) else None


def _ours_by_name(entry: Any) -> bool:
    """An entry that starts a `knowledge-mcp` by an absolute path (this install or another)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    command = Path(entry["command"])
    return command.stem == "knowledge-mcp" and command.is_absolute()


def _stale(entry: Any) -> bool:
    """A knowledge-mcp command that is not on the disk any more."""
    return _ours_by_name(entry) and not os.path.exists(entry["command"])


def _data_dir(entry: dict[str, Any], ctx: Context) -> str:
    args = entry.get("args")
    if isinstance(args, list) and "--data-dir" in args[:-1]:
        data_dir = str(args[args.index("--data-dir") + 1])
        same = ctx.settings is not None and Path(data_dir) == ctx.settings.data_dir
        return f", data dir {data_dir}" + ("" if same or ctx.settings is None else " (not the one above)")
    return ", the default data dir"
