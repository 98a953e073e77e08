"""Merging one server entry into a host's JSON config: read it (refusing what is not a JSON
object), keep everything else, copy the old file aside, write the new one whole and rename it into
place; nothing at all when the entry is already there."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from knowledge_mcp.sources.errors import KnowledgeError

from .locations import points_here


class SetupError(KnowledgeError):
    pass


@dataclass(frozen=True)
class SetupResult:
    path: Path
    outcome: str  # "added", "updated", "unchanged"
    backup: Path | None


def write_entry(
    path: Path, name: str, entry: dict[str, Any], command: list[str], *, force: bool
) -> SetupResult:
    """Merge `entry` into `path`'s `mcpServers` under `name`. An entry of that name which starts
    something else is refused unless `force`; one of this install is updated, keeping its other keys."""
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
