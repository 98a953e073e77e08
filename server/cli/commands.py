"""The terminal commands that are not serving: import, search and API keys."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.db import database_path
from knowledge_mcp.sources.storage.files.walking import iter_files
from knowledge_mcp.sources.storage.importing import ImportSummary

from ..backend import opened
from ..config import Settings
from ..transports.collecting import fewer_collections


def import_command(settings: Settings, source_name: str, paths: list[Path], prune: bool) -> ImportSummary:
    """`knowledge-mcp import`: `run_import` on asyncio's own runner (anyio's is not loaded: an
    import needs none of it). The start-up's objects (modules, classes, the pydantic models) are
    frozen out of the cyclic garbage collector, which would otherwise walk them all at each full
    collection, and the youngest generation is collected less often: a folder's import allocates
    mostly rows and items that live until their batch is written (docs/performance.md, Build 5)."""
    with fewer_collections():  # what was loaded since the command line (the source, the writer)
        return asyncio.run(run_import(settings, source_name, paths, prune))


async def run_import(settings: Settings, source_name: str, paths: list[Path], prune: bool) -> ImportSummary:
    """Import into the user's source, wherever the backend keeps items; a database that cannot be
    used (broken, full, a folder) is a one-line SourceUnavailableError with its remedy, and what
    was written stays."""
    show = sys.stderr.isatty()
    existing = [p for p in paths if p.exists()]
    total = sum(1 for _ in iter_files(existing, get_source(source_name).extensions)) if show else None
    path = database_path(settings.data_dir, settings.user, source_name)
    async with opened(settings) as backend:
        with file_progress(source_name, total, show) as on_file:
            return await backend.items.import_files(
                settings.user,
                source_name,
                path,
                paths,
                prune=prune,
                max_file_bytes=int(settings.import_max_file_mb * 1024 * 1024),
                on_file=on_file,
            )


@contextmanager
def file_progress(source_name: str, total: int | None, show: bool) -> Iterator[Callable[[Path], None] | None]:
    """An import's progress bar on a terminal, as the run's per-file callback; None elsewhere.
    rich is loaded only to show it (docs/performance.md, "Lazy imports")."""
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    columns = (TextColumn("importing {task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(source_name, total=total)
        yield lambda _: progress.advance(task)


def print_summary(summary: ImportSummary, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary.as_dict(), ensure_ascii=False))
        return
    print(
        f"{summary.source}: {summary.added} added, {summary.updated} updated, {summary.unchanged} unchanged, "
        f"{summary.skipped} skipped, {summary.pruned} pruned; {summary.files_seen} file(s) seen, "
        f"{summary.files_failed} failed"
    )
    for notice in summary.notices:
        print(f"  notice: {notice['path']}: {notice['reason']}")
    for failure in summary.failures:
        print(f"  failed: {failure['path']}: {failure['reason']}")


async def run_search(settings: Settings, query: str, sources: list[str], limit: int) -> list[dict[str, Any]]:
    """The user's best `limit` hits across `sources`, read where the backend keeps items (as
    the server answers)."""
    rows: list[dict[str, Any]] = []
    from knowledge_mcp.sources.search.request import SearchRequest  # the search code: not for `import`

    request = SearchRequest(query, limit=limit)
    async with opened(settings) as backend:
        for name in sources:
            path = database_path(settings.data_dir, settings.user, name)
            db = await backend.items.reading(settings.user, name, path)
            if db is None:
                continue
            response = await get_source(name).search(db, request, settings.defaults())
            rows += [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in response.results]
    rows.sort(key=lambda r: -r["score"])
    for rank, row in enumerate(rows[:limit], start=1):
        row["rank"] = rank  # one list across sources: its own ranks, not each source's
    return rows[:limit]


def print_results(rows: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps({"results": rows}, ensure_ascii=False))
        return
    from rich.console import Console  # only for the terminal's table
    from rich.table import Table

    from knowledge_mcp.sources.wire import rounded, score_digits  # not loaded by `import`

    table = Table(show_lines=True)
    for column in ("score", "title", "uri", "snippet"):
        table.add_column(column)
    digits = score_digits(r["score"] for r in rows)  # the numbers the server's tools say
    for r in rows:
        table.add_row(str(rounded(r["score"], digits)), r["title"], r["uri"], r["snippet"])
    Console().print(table if rows else "no results")


async def run_keys_command(
    settings: Settings, action: str, user: str | None, prefix: str | None, scopes: list[str]
) -> int:
    """`knowledge-mcp keys create|list|revoke`, in the backend's key store."""
    # Loaded here, not with the module: the key store's scopes load the MCP SDK (~1 s), which
    # `import` and `search` never need (docs/performance.md, "Lazy imports").
    from ..auth.keys import run_keys

    async with opened(settings) as backend:
        return await run_keys(backend.keys, action, user, prefix, scopes)
