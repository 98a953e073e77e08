"""`knowledge-mcp setup HOST`: write this install into a host's MCP config.

The host's file is read, our one entry merged into its `mcpServers` (everything else in the file
is kept as it was), the old file copied aside, and the new one written whole in its place. Run
again, it changes nothing. An entry of the same name that starts something else is never
replaced without `--force`. `--print` writes nothing and prints the snippet for any host.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .locations import HOSTS, SERVER_NAME, config_path, ephemeral, launcher, server_entry
from .merge import SetupError, write_entry


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
