"""The terminal commands that are not serving: import and search."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from knowledge_mcp.sources.errors import SourceUnavailableError
from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.storage.db import (
    Database,
    database_path,
    open_database,
    probe_database,
    source_failure,
    storage_failure,
)
from knowledge_mcp.sources.storage.files.walking import iter_files
from knowledge_mcp.sources.storage.importing import Importer, ImportSummary
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore

from ..config import Settings

stderr = Console(stderr=True)


async def run_import(settings: Settings, source_name: str, paths: list[Path], prune: bool) -> ImportSummary:
    """Import into the user's database; a database that cannot be used (broken, full, a folder)
    is a one-line SourceUnavailableError with its remedy, and what was written stays. With
    `item_store = "postgresql"` the items go to the PostgreSQL store instead."""
    if settings.item_store == "postgresql" and settings.database_url is not None:
        from .pg_import import run_pg_import  # psycopg: only with that store

        return await run_pg_import(
            settings.database_url.get_secret_value(), settings, source_name, paths, prune
        )
    path = database_path(settings.data_dir, settings.user, source_name)
    try:
        probe_database(path)
        db = await open_database(path, get_source(source_name).migrations)
    except OSError as exc:
        raise SourceUnavailableError(
            f"database {path} cannot be created ({exc.strerror or exc}): check the data directory"
        ) from exc
    except Exception as exc:
        raise _unusable(exc, path) from None
    try:
        return await _import_into(db, settings, source_name, paths, prune)
    except Exception as exc:
        raise _unusable(exc, path) from None
    finally:
        await db.close()


async def _import_into(
    db: Database, settings: Settings, source_name: str, paths: list[Path], prune: bool
) -> ImportSummary:
    source = get_source(source_name)
    show = sys.stderr.isatty()
    existing = [p for p in paths if p.exists()]
    total = sum(1 for _ in iter_files(existing, source.extensions)) if show else None
    with Progress(
        TextColumn("importing {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=stderr,
        disable=not show,
        transient=True,
    ) as progress:
        task = progress.add_task(source_name, total=total)
        importer = Importer(source, db, max_file_bytes=int(settings.import_max_file_mb * 1024 * 1024))
        return await importer.run(paths, prune=prune, on_file=lambda _: progress.advance(task))


def _unusable(exc: Exception, path: Path) -> Exception:
    """The one-line error for a database that cannot be used, else `exc` itself."""
    failure = storage_failure(exc, path)
    if failure is None:
        return exc
    failure.__cause__ = exc
    return failure


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
    """The user's best `limit` hits across `sources`: from their SQLite files, or with
    `item_store = "postgresql"` from the PostgreSQL item store (as the server answers)."""
    if settings.item_store == "postgresql" and settings.database_url is not None:
        from ..shared.items import ServedItemStore  # psycopg: only with that store

        store = ServedItemStore(settings.database_url.get_secret_value())
        try:
            return await _search_each(settings, query, sources, limit, store)
        finally:
            await store.close()
    return await _search_each(settings, query, sources, limit, None)


async def _search_each(
    settings: Settings, query: str, sources: list[str], limit: int, store: Any
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    request = SearchRequest(query, limit=limit)
    for name in sources:
        source = get_source(name)
        path = database_path(settings.data_dir, settings.user, name)
        if store is not None:
            response = await source.search(
                await store.items(settings.user, name, path), request, settings.defaults()
            )
        elif not path.exists():
            continue
        else:
            db = await _open_to_read(path, name, settings.user)
            try:
                response = await source.search(SqliteStore(db, name), request, settings.defaults())
            finally:
                await db.close()
        rows += [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in response.results]
    rows.sort(key=lambda r: -r["score"])
    for rank, row in enumerate(rows[:limit], start=1):
        row["rank"] = rank  # one list across sources: its own ranks, not each source's
    return rows[:limit]


async def _open_to_read(path: Path, source: str, user: str) -> Database:
    """The source's database for a terminal search; a damaged or unusable one is the same one
    sentence a tool answers (source, cause, remedy), not a traceback."""
    try:
        return await open_database(path, get_source(source).migrations)
    except sqlite3.DatabaseError as exc:
        failure = source_failure(exc, source, user)
        if failure is None:
            raise
        raise failure from None


def print_results(rows: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps({"results": rows}, ensure_ascii=False))
        return
    table = Table(show_lines=True)
    for column in ("score", "title", "uri", "snippet"):
        table.add_column(column)
    for r in rows:
        table.add_row(f"{r['score']:.2f}", r["title"], r["uri"], r["snippet"])
    Console().print(table if rows else "no results")
