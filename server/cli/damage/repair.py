"""`knowledge-mcp repair SOURCE [--user U]`: rebuild a damaged source database from its files.

The damaged file is moved aside (`notes.db.damaged-<time>`, kept, never deleted), the source
is imported again from the files and folders its imports were given (recorded in the
database, read from what of it is still readable), the vectors of every chunk whose text is
unchanged are put back (so nothing is embedded again), and the report names what could not
be recovered: items whose files are gone, rows a damaged page made unreadable.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.search.dense.sqlite.vectors import (
    INSERT_CHUNK_SQL,
    INSERT_VECTORS_SQL,
    sql,
)
from knowledge_mcp.sources.storage.damage import integrity
from knowledge_mcp.sources.storage.damage.salvage import Salvage, salvage
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer

from ...config import Settings
from .findings import damage_of

CHUNKS_SQL = "SELECT id, title, body FROM {p}_chunks"
GONE_SHOWN = 20


@dataclass
class RepairReport:
    source: str
    user: str
    damaged_copy: str = ""
    """Where the damaged file was moved (kept)."""
    items_restored: int = 0
    vectors_reattached: int = 0
    files_failed: list[dict[str, str]] = field(default_factory=list)
    paths_gone: list[str] = field(default_factory=list)
    """Files and folders the source was imported from that are gone."""
    items_not_recovered: list[dict[str, str]] = field(default_factory=list)
    """Items whose file is gone: {title, path}."""
    rows_unreadable: int = 0
    unrecorded: bool = False
    """Nothing in the damaged file says what was imported into it (unreadable, or never imported)."""
    seconds: float = 0.0


async def run_repair(settings: Settings, source_name: str) -> RepairReport:
    """Repair the user's `source_name` database; KnowledgeError when there is nothing to repair."""
    if settings.item_store == "postgresql":
        raise KnowledgeError(
            "repair: the PostgreSQL item store keeps its own integrity; repair is for SQLite"
        )
    started = time.perf_counter()
    path = database_path(settings.data_dir, settings.user, source_name)
    report = RepairReport(source_name, settings.user)
    if integrity.stamp(path) is None:
        raise KnowledgeError(f"repair: user {settings.user} has no {source_name} database; nothing to repair")
    problem = damage_of(path)
    if problem is None:
        raise KnowledgeError(
            f"repair: the {source_name} database passes SQLite's integrity check; nothing to repair"
        )
    found = salvage(path, source_name)
    report.rows_unreadable = found.rows_lost
    report.damaged_copy = str(move_aside(path))
    db = await open_database(path, get_source(source_name).migrations)
    try:
        await _rebuild(db, source_name, found, report, settings)
    finally:
        await db.close()
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def move_aside(path: Path) -> Path:
    """Move the database (and its write-ahead log and index) to `<name>.damaged-<UTC time>`."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    path.rename(target)
    for suffix in ("-wal", "-shm"):
        companion = Path(f"{path}{suffix}")
        if companion.exists():
            companion.rename(Path(f"{target}{suffix}"))
    return target


async def _rebuild(db: Database, p: str, found: Salvage, report: RepairReport, settings: Settings) -> None:
    given = [Path(path) for path, _ in found.paths]
    files = dict.fromkeys([*found.files, *(where for _, where in found.items)])  # in order, once
    covered = [Path(f) for f in files if not any(Path(f).is_relative_to(g) for g in given)]
    paths = [*given, *covered]
    report.unrecorded = not paths
    report.paths_gone = [str(x) for x in paths if not x.exists()]
    importer = Importer(get_source(p), db, max_file_bytes=int(settings.import_max_file_mb * 1024 * 1024))
    summary = await importer.run([x for x in paths if x.exists()])
    report.items_restored = summary.added
    report.files_failed = list(summary.failures)
    gone = [{"title": title, "path": where} for title, where in found.items if not Path(where).exists()]
    report.items_not_recovered = gone
    report.vectors_reattached = await reattach_vectors(db, p, found)


async def reattach_vectors(db: Database, p: str, found: Salvage) -> int:
    """Give each rebuilt chunk the vectors its unchanged text had; how many chunks got them."""
    if not found.texts:
        return 0
    links = []
    for row in await db.fetchall(sql(CHUNKS_SQL, p)):
        text_hash = found.texts.get((row["title"], row["body"]))
        if text_hash is not None and text_hash in found.vectors:
            links.append((int(row["id"]), text_hash))
    used = {h for _, h in links}
    async with db.transaction() as conn:
        rows = [(h, *found.vectors[h]) for h in sorted(used)]
        await conn.executemany(sql(INSERT_VECTORS_SQL, p), rows)
        await conn.executemany(sql(INSERT_CHUNK_SQL, p), links)
    return len(links)


def print_report(report: RepairReport, as_json: bool) -> int:
    """The report on stdout; exit status 0 when everything was recovered, 2 when something was not."""
    lost = bool(report.items_not_recovered or report.files_failed or report.unrecorded)
    if as_json:
        print(json.dumps(asdict(report), ensure_ascii=False))
        return 2 if lost else 0
    print(
        f"{report.source}: {report.items_restored} item(s) restored from your files, "
        f"{report.vectors_reattached} chunk(s) got their vectors back ({report.seconds:.1f} s); "
        f"the damaged file is kept at {report.damaged_copy}"
    )
    for gone in report.paths_gone:
        print(f"  gone: {gone} (it was imported, and is no longer there)")
    for item in report.items_not_recovered[:GONE_SHOWN]:
        print(f"  not recovered: {item['title']} ({item['path']}: the file is gone)")
    if len(report.items_not_recovered) > GONE_SHOWN:
        print(f"  … and {len(report.items_not_recovered) - GONE_SHOWN} more items whose files are gone")
    for failure in report.files_failed:
        print(f"  failed: {failure['path']}: {failure['reason']}")
    if report.unrecorded:
        print(
            f"  the damaged file holds no record of what was imported into it: import your folders "
            f"again (`knowledge-mcp import {report.source} <folder>`)"
        )
    if report.rows_unreadable:
        print(
            f"  {report.rows_unreadable} row(s) of the damaged file could not be read (their items "
            "were rebuilt from your files where those exist)"
        )
    return 2 if lost else 0
