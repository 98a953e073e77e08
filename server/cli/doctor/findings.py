"""What a doctor check says (`Finding`), what it is given (`Context`), and the one screen."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ...config import Settings

Status = Literal["ok", "note", "warn", "fail"]
"""`fail` makes `doctor` exit 1 and must carry a `fix`; `warn` is worth knowing but works."""


@dataclass(frozen=True)
class Finding:
    topic: str  # a few words: "data dir", "notes db", "PostgreSQL"
    detail: str  # one line; never a secret, never content
    status: Status = "ok"
    fix: str | None = None  # one sentence: what to run or change


@dataclass
class Context:
    """What every check may read. `settings` is None when the configuration itself failed
    (that check reports why); checks that need it then say nothing."""

    settings: Settings | None
    config_file: Path | None
    command: list[str]  # how hosts start this install (hosts.launcher)
    environment: list[str] = field(default_factory=list)  # KNOWLEDGE_MCP_* names set (never values)
    config_error: str | None = None  # why settings is None
    users: list[str] = field(default_factory=list)  # filled by the data dir check

    @classmethod
    def environment_names(cls) -> list[str]:
        return sorted(k for k in os.environ if k.startswith("KNOWLEDGE_MCP_"))


Check = Callable[[Context], Awaitable[list[Finding]]]
"""A doctor check: reads the context (and the disk, a database, the network: briefly), returns
its lines. It must not change anything, and must not raise: a problem is a `fail` finding."""


MARKS: dict[Status, str] = {"ok": "ok  ", "note": "--  ", "warn": "warn", "fail": "FAIL"}


def render(findings: list[Finding]) -> str:
    """The screen: one line per finding, its fix under it, then the verdict."""
    width = max((len(f.topic) for f in findings), default=0)
    lines = []
    for f in findings:
        lines.append(f"{MARKS[f.status]}  {f.topic.ljust(width)}  {f.detail}")
        if f.fix:
            label = "fix" if f.status in ("warn", "fail") else "hint"
            lines.append(f"      {' ' * width}  {label}: {f.fix}")
    failed = [f for f in findings if f.status == "fail"]
    if failed:
        lines.append(f"{len(failed)} problem(s) to fix (see the FAIL lines above)")
    else:
        lines.append("no problems found")
    return "\n".join(lines)
