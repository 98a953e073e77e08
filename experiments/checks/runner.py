"""Ranking checks on a real folder of mixed files: does `knowledge_search` put the right item
where a person expects it?

    python -m experiments.checks --checks checks.toml --folder DIR [--mode auto] [--json]

`DIR` holds one subfolder per source (`notes/`, `media/`, `chats/`, `characters/`,
`prompts/`; any may be missing); each is imported into its source for a throw-away user (or
into `--data-dir`, kept, so a second run neither imports nor embeds again). With a mode other
than `lexical`, missing vectors are computed first. The checks file is TOML:

    [[find]]                     # the item whose title (or uri) contains `expect` is in the top `top`
    query = "sync conflicts"
    expect = "Troubleshoot Obsidian Sync"
    top = 3

    [[above]]                    # the item matching every query word outranks the one-word match
    query = "canvas card colors"
    full = "Canvas"              # a title (or uri) fragment
    partial = "Colors"

Each check passes or fails with the ranks and scores it saw; the exit status is 1 when any failed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp_types import Implementation

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.logs import configure_logging
from knowledge_mcp.sources.registry import SOURCE_NAMES, get_source
from knowledge_mcp.sources.search.dense.embedder import embedder
from knowledge_mcp.sources.search.dense.indexing import embed_missing
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer

USER = "checks"
LIMIT = 20


@dataclass(frozen=True)
class Outcome:
    kind: str
    query: str
    passed: bool
    detail: str


def position(results: list[dict[str, Any]], fragment: str) -> int | None:
    """The 1-based rank of the first result whose title or uri contains `fragment`
    (case-insensitive), or None."""
    wanted = fragment.casefold()
    for rank, r in enumerate(results, start=1):
        if wanted in str(r.get("title", "")).casefold() or wanted == str(r.get("uri", "")).casefold():
            return rank
    return None


def judge_find(check: dict[str, Any], results: list[dict[str, Any]]) -> Outcome:
    top = int(check.get("top", 3))
    rank = position(results, check["expect"])
    seen = f"rank {rank}, score {results[rank - 1]['score']}" if rank else f"not in the top {len(results)}"
    first = f"; first: {results[0]['title']!r} {results[0]['score']}" if results else "; no results"
    passed = rank is not None and rank <= top
    return Outcome(
        "find", check["query"], passed, f"{check['expect']!r} expected in top {top}: {seen}{first}"
    )


def judge_above(check: dict[str, Any], results: list[dict[str, Any]]) -> Outcome:
    full, partial = position(results, check["full"]), position(results, check["partial"])
    passed = full is not None and (partial is None or full < partial)

    def show(rank: int | None) -> str:
        return f"rank {rank} ({results[rank - 1]['score']})" if rank else "absent"

    detail = f"full match {check['full']!r} {show(full)}, one-word match {check['partial']!r} {show(partial)}"
    return Outcome("above", check["query"], passed, detail)


async def load(folder: Path, data_dir: Path, embed: bool) -> dict[str, int]:
    """Import each source's subfolder of `folder` (and embed it when asked); items per source."""
    counts: dict[str, int] = {}
    for name in SOURCE_NAMES:
        sub = folder / name
        if not sub.is_dir():
            continue
        src = get_source(name)
        db = await open_database(database_path(data_dir, USER, name), src.migrations)
        try:
            await Importer(src, db).run([sub])
            model = embedder() if embed else None
            if model is not None:
                await embed_missing(db, name, model)
            row = await db.fetchone(f"SELECT count(*) FROM {name}_items")
            counts[name] = int(row[0]) if row is not None else 0
        finally:
            await db.close()
    return counts


async def run_checks(
    checks: dict[str, Any], folder: Path, mode: str, data_dir: Path | None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="knowledge-mcp-checks-", ignore_cleanup_errors=True) as tmp:
        where = data_dir if data_dir is not None else Path(tmp)
        counts = await load(folder, where, mode != "lexical")
        settings = Settings(
            data_dir=where, user=USER, rate_limit_per_minute=0, embed_in_background=False, log_level="WARNING"
        )
        mcp, host = build_server(settings)
        outcomes: list[Outcome] = []
        try:
            async with Client(mcp, client_info=Implementation(name="checks", version="1")) as client:
                for kind, judge in (("find", judge_find), ("above", judge_above)):
                    for check in checks.get(kind, []):
                        arguments = {"query": check["query"], "limit": LIMIT, "seen": "show", "mode": mode}
                        result = await client.call_tool("knowledge_search", arguments)
                        outcomes.append(judge(check, (result.structured_content or {}).get("results", [])))
        finally:
            await host.pool.close()
    return {
        "folder": str(folder),
        "mode": mode,
        "items": counts,
        "passed": sum(o.passed for o in outcomes),
        "checks": len(outcomes),
        "outcomes": [asdict(o) for o in outcomes],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.checks")
    parser.add_argument("--checks", type=Path, required=True, help="the checks file (TOML)")
    parser.add_argument("--folder", type=Path, required=True, help="a folder with one subfolder per source")
    parser.add_argument("--mode", default="auto", choices=["auto", "lexical", "semantic", "hybrid"])
    parser.add_argument("--data-dir", type=Path, help="keep the import (and vectors) here for the next run")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    checks = tomllib.loads(args.checks.read_text(encoding="utf-8"))
    report = anyio.run(run_checks, checks, args.folder, args.mode, args.data_dir)
    if args.json:
        print(json.dumps(report))
    else:
        print(
            f"{report['passed']}/{report['checks']} checks pass ({report['mode']}; items {report['items']})"
        )
        for o in report["outcomes"]:
            print(f"  {'PASS' if o['passed'] else 'FAIL'} {o['kind']:<5} {o['query']!r}: {o['detail']}")
    return 0 if report["passed"] == report["checks"] else 1
