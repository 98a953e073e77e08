"""`knowledge-mcp setup HOST`: write this install into a host's MCP config.

The host's file is read, our one entry merged into its `mcpServers` (everything else in the file
is kept as it was), the old file copied aside, and the new one written whole in its place. Run
again, it changes nothing. An entry of the same name that starts something else is never
replaced without `--force`. `--print` writes nothing and prints the snippet for any host.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from knowledge_mcp.sources.errors import KnowledgeError

from .hosts import HOSTS, SERVER_NAME, config_path, ephemeral, launcher, points_here, server_entry


class SetupError(KnowledgeError):
    pass


@dataclass(frozen=True)
class SetupResult:
    path: Path
    outcome: str  # "added", "updated", "unchanged"
    backup: Path | None


def add_parser(sub: Any) -> None:
    setup = sub.add_parser(
        "setup",
        help="write this server into an MCP host's config (claude-desktop, claude-code, cursor)",
    )
    setup.add_argument(
        "host", help=f"{', '.join(HOSTS)}; any other name with --print prints the JSON to paste"
    )
    setup.add_argument("--data-dir", type=Path, help="the data directory the host's server should use")
    setup.add_argument("--config-path", type=Path, help="the host's config file (default: where it keeps it)")
    setup.add_argument(
        "--name", default=SERVER_NAME, help=f"the server's name in the host (default {SERVER_NAME})"
    )
    setup.add_argument("--force", action="store_true", help="replace another server of the same name")
    setup.add_argument("--print", action="store_true", help="print the config snippet; write nothing")


def run_setup_command(args: argparse.Namespace) -> int:
    data_dir = args.data_dir.expanduser().resolve() if args.data_dir is not None else None
    command = launcher()
    if args.print:
        host = args.host if args.host in HOSTS else None
        snippet = {"mcpServers": {args.name: server_entry(host, command, data_dir)}}
        print(json.dumps(snippet, indent=2, ensure_ascii=False))
        return 0
    if args.host not in HOSTS:
        raise SetupError(
            f"host: setup writes the config of {', '.join(HOSTS)}; for {args.host!r} add --print "
            "and paste the snippet into its MCP settings"
        )
    path = args.config_path.expanduser() if args.config_path is not None else config_path(args.host)
    entry = server_entry(args.host, command, data_dir)
    if ephemeral(command):
        print(
            f"warning: {command[0]} is in uvx's cache, which uv may clean: install it for good "
            "(`uv tool install` or `pipx install`) and run setup from there",
            file=sys.stderr,
        )
    result = write_entry(path, args.name, entry, command, force=args.force)
    title = HOSTS[args.host].title
    if result.outcome == "unchanged":
        print(f"{title}: {path} already starts this server as {args.name!r}; nothing changed")
        return 0
    print(f"{title}: {result.outcome} {args.name!r} in {path}")
    if result.backup is not None:
        print(f"  the previous file is kept as {result.backup}")
    print(f"  restart {title} to load it; `knowledge-mcp doctor` shows what it will find")
    return 0


def write_entry(
    path: Path, name: str, entry: dict[str, Any], command: list[str], *, force: bool
) -> SetupResult:
    """Merge `entry` into `path`'s `mcpServers` under `name`; see the module docstring."""
    config = _read(path)
    servers = config.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise SetupError(f"{path}: mcpServers is not a JSON object; fix it by hand or pass --config-path")
    old = servers.get(name)
    if old is not None and not force and not points_here(old, command):
        raise SetupError(
            f"{path} already has a server named {name!r} that starts something else "
            f"({_describe(old)}): pass --force to replace it, or --name to add this one beside it"
        )
    new = {**old, **entry} if isinstance(old, dict) and points_here(old, command) else entry
    if new == old:
        return SetupResult(path, "unchanged", None)
    servers[name] = new
    backup = _backup(path) if path.exists() else None
    _write(path, config)
    return SetupResult(path, "added" if old is None else "updated", backup)


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SetupError(f"{path} cannot be read ({exc.strerror or exc})") from None
    if not text.strip():
        return {}
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SetupError(
            f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}); fix it, or print the snippet "
            "with --print and add it by hand"
        ) from None
    if not isinstance(config, dict):
        raise SetupError(f"{path} is not a JSON object; fix it, or pass --config-path")
    return config


def _describe(entry: Any) -> str:
    if isinstance(entry, dict) and isinstance(entry.get("command"), str):
        return f"command {entry['command']}"
    if isinstance(entry, dict) and isinstance(entry.get("url"), str):
        return f"url {entry['url']}"
    return "an entry of another shape"


def _backup(path: Path) -> Path:
    """Copy `path` beside itself as `<name>.<UTC time>.bak` (never over an earlier backup)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    backup = path.with_name(f"{path.name}.{stamp}.bak")
    n = 1
    while backup.exists():
        n += 1
        backup = path.with_name(f"{path.name}.{stamp}-{n}.bak")
    shutil.copy2(path, backup)
    return backup


def _write(path: Path, config: dict[str, Any]) -> None:
    """Write the whole file beside the old one, then rename it into place (keeping its mode)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if path.exists():
            shutil.copymode(path, temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
