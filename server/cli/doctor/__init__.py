"""`knowledge-mcp doctor`: one screen on the state of this install, exit 1 with the fix when
something is wrong. The checks are small functions listed in `registry.CHECKS`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ...config import ENV_PREFIX, ConfigError, Settings, load_settings
from ..hosts.locations import launcher
from .findings import Context, Finding, render
from .registry import CHECKS

__all__ = ["CHECKS", "Context", "Finding", "add_parser", "run_doctor"]


def add_parser(sub: Any, common: Any) -> None:
    doctor = sub.add_parser("doctor", help="check this install: data, model, PostgreSQL, host configs")
    common(doctor)


async def run_doctor(args: argparse.Namespace) -> int:
    """Run every check (one failing check is a FAIL line, never a traceback), print the screen."""
    config_file = args.config or (
        Path(os.environ[ENV_PREFIX + "CONFIG"]) if ENV_PREFIX + "CONFIG" in os.environ else None
    )
    settings: Settings | None = None
    error = None
    try:
        settings = load_settings(
            args.config,
            data_dir=args.data_dir,
            user=args.user,
            database_url=args.database_url,
            item_store=args.item_store,
        )
    except ConfigError as exc:
        error = str(exc)
    ctx = Context(settings, config_file, launcher(), Context.environment_names(), config_error=error)
    findings: list[Finding] = []
    for check in CHECKS:
        try:
            findings += await check(ctx)
        except Exception as exc:  # a boundary: one broken check must not hide the others
            name = check.__name__.removeprefix("check_").replace("_", " ")
            findings.append(
                Finding(name, f"the check itself failed: {type(exc).__name__}", "fail", "report it")
            )
    print(render(findings))
    return 1 if any(f.status == "fail" for f in findings) else 0
