"""The watcher and links (issue 25): a watched single file swapped for a link to a file outside
is refused with a notice and a log line, never read; a folder on its way that became a link is
refused too; and a link flipped every ~3 ms between an inside note and an outside file, while
the watcher re-imports it, never puts the outside text into the index (0 of 200 polls)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from loguru import logger
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.watch import Watcher
from knowledge_mcp.server.watch.folders import Target
from knowledge_mcp.server.watch.reindex import SqliteIndex, reindex
from knowledge_mcp.sources.notes.source import NotesSource
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from tests.conftest import call, import_into
from tests.links import LinkFlipper

pytestmark = pytest.mark.anyio

CANARY = "quokka-canary-7731"
POLLS = 200
LEAKED_SQL = "SELECT COUNT(*) FROM notes_items WHERE content LIKE '%" + CANARY + "%'"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path.resolve() / "private" / "outside.md"
    path.parent.mkdir()
    path.write_text(f"# Outside\n\nThe private code is {CANARY}, for no index.\n", encoding="utf-8")
    return path


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    """A single file, imported as a file (not its folder)."""
    path = tmp_path.resolve() / "desk" / "plan.md"
    path.parent.mkdir()
    path.write_text("# Plan\n\nThe garden plan names tomatoes.\n", encoding="utf-8")
    return path


@pytest.fixture
async def notes_db(data_dir: Path) -> AsyncIterator[Database]:
    db = await open_database(database_path(data_dir, "local", "notes"), NotesSource().migrations)
    try:
        yield db
    finally:
        await db.close()


async def until(predicate: Any, seconds: float = 15.0) -> None:
    async with asyncio.timeout(seconds):
        while not await predicate():
            await asyncio.sleep(0.05)


def swap_for_link(path: Path, target: Path) -> None:
    """Replace `path` by a link to `target` in one step (a link renamed over it)."""
    spare = path.with_name(f".{path.name}.link")
    spare.symlink_to(target)
    os.replace(spare, path)


async def test_a_watched_single_file_swapped_for_a_link_to_an_outside_file_never_reaches_search(
    data_dir: Path, plan: Path, outside: Path
) -> None:
    await import_into(data_dir, "notes", plan)
    mcp, host = build_server(Settings(data_dir=data_dir, rate_limit_per_minute=0))
    watcher = Watcher(
        data_dir,
        host.backend.items.watched(),
        host.changes,
        users=["local"],
        max_file_bytes=1 << 20,
        rescan_s=0.5,
    )
    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(str(message)), level="DEBUG")
    watcher.start()
    try:
        async with Client(mcp) as client:
            await until(lambda: _more(watcher, 0))  # the catch-up
            before = watcher.batches
            swap_for_link(plan, outside)
            await until(lambda: _more(watcher, before))
            found = (await call(client, "notes_search", query=CANARY))["results"]
            kept = (await call(client, "notes_search", query="garden tomatoes"))["results"]
    finally:
        logger.remove(sink)
        await watcher.stop()
        await host.pool.close()
    assert found == [], "the outside file's text reached search"
    assert kept, "the note as it was imported stays"
    refused = [line for line in lines if "plan.md" in line and "symbolic link" in line]
    assert refused, "the refusal is logged"
    assert not any("for no index" in line for line in lines), "no file content in the log"


async def _more(watcher: Watcher, than: int) -> bool:
    return watcher.batches > than


async def test_a_watched_single_file_whose_folder_became_a_link_is_refused_with_a_notice(
    data_dir: Path, plan: Path, outside: Path, notes_db: Database
) -> None:
    await import_into(data_dir, "notes", plan)
    (outside.parent / "plan.md").write_text(outside.read_text(encoding="utf-8"), encoding="utf-8")
    plan.parent.rename(plan.parent.with_name("desk-moved"))
    plan.parent.symlink_to(outside.parent)
    target = Target("local", "notes", plan, is_folder=False)
    summary, _ = await reindex(SqliteIndex(Importer(NotesSource(), notes_db)), target, [str(plan)])
    assert (await notes_db.fetchone(LEAKED_SQL))[0] == 0
    assert any("symbolic link" in n["reason"] for n in summary.notices), summary.notices


async def test_the_watcher_racing_a_link_flipper_never_indexes_the_outside_text(
    data_dir: Path, tmp_path: Path, outside: Path, notes_db: Database
) -> None:
    vault = tmp_path.resolve() / "vault"
    vault.mkdir()
    (vault / "inside.md").write_text("# Inside\n\nA note about herons.\n", encoding="utf-8")
    await import_into(data_dir, "notes", vault)
    index = SqliteIndex(Importer(NotesSource(), notes_db))
    target = Target("local", "notes", vault, is_folder=True)
    leaks = 0
    with LinkFlipper(vault / "flip.md", [vault / "inside.md", outside]) as flipper:
        seen = 0
        for _ in range(POLLS):
            seen = await flipper.next_flip(seen)
            await reindex(index, target, [str(vault / "flip.md")])
            leaks += (await notes_db.fetchone(LEAKED_SQL))[0] > 0
    assert leaks == 0, f"{leaks} of {POLLS} watcher polls indexed the outside file's text"
