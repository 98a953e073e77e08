"""`knowledge-mcp migrate --to postgresql://…`: copy a user's SQLite sources into PostgreSQL."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.registry import SOURCE_NAMES, get_source
from knowledge_mcp.sources.storage.db import database_path, open_database

from ..config import Settings


def add_parser(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    mig = sub.add_parser("migrate", help="copy a user's data into the PostgreSQL store")
    common(mig)
    mig.add_argument(
        "--to", required=True, help="postgresql://… to copy into (resumable: run again to finish)"
    )
    mig.add_argument("--source", action="append", choices=SOURCE_NAMES, help="only this source (repeatable)")
    mig.add_argument("--json", action="store_true", help="print the report as one JSON object")


async def run_migrate(settings: Settings, url: str, sources: list[str]) -> list[dict[str, Any]]:
    """Copy each source's SQLite database of the user (those that exist) into `url`."""
    from knowledge_mcp.sources.storage.postgres.copying import copy_source
    from knowledge_mcp.sources.storage.postgres.migrations import migrate
    from knowledge_mcp.sources.storage.postgres.pool import check_url, open_pg
    from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS

    pg = await open_pg(check_url(url))
    reports: list[dict[str, Any]] = []
    try:
        await migrate(pg, COMPONENT, MIGRATIONS)
        for name in sources:
            path = database_path(settings.data_dir, settings.user, name)
            if not path.exists():
                continue
            source = get_source(name)
            lite = await open_database(path, source.migrations)
            try:
                reports.append((await copy_source(lite, pg, source, settings.user)).as_dict())
            finally:
                await lite.close()
    finally:
        await pg.close()
    return reports


def print_reports(reports: list[dict[str, Any]], as_json: bool) -> int:
    """The reports; exit 2 when a source's copy does not verify."""
    failed = [r for r in reports if not r["verified"]]
    if as_json:
        print(json.dumps({"sources": reports, "verified": not failed}))
    elif not reports:
        print("nothing to copy: the user has no SQLite databases in the data directory")
    for r in reports if not as_json else []:
        outcomes = ", ".join(f"{n} {k}" for k, n in sorted(r["outcomes"].items())) or "nothing"
        print(
            f"{r['source']}: {outcomes}; items/chunks SQLite {r['sqlite']} PostgreSQL {r['postgres']}; "
            f"{r['same_top10']}/{r['searches']} sample searches rank the same top 10"
            + ("" if r["verified"] else "  NOT VERIFIED")
        )
    return 2 if failed else 0


def check_sources(names: list[str] | None) -> list[str]:
    if names is not None and not names:
        raise KnowledgeError("--source: name a source")
    return list(dict.fromkeys(names or SOURCE_NAMES))
