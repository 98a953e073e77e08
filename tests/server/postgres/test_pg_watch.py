"""`serve --watch` with `item_store = "postgresql"`: the folders recorded by a PostgreSQL import
are watched, and files changed on disk are re-indexed into PostgreSQL (a real server, its item
store and the real watcher; real files changed)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.cli.commands import run_import
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.watch import Change, Watcher
from knowledge_mcp.sources.storage.db import database_path

from ...conftest import FIXTURES, call

pytestmark = pytest.mark.anyio


async def until(predicate: Any, seconds: float = 20.0) -> None:
    """Wait for an async predicate to hold (polled), or fail after `seconds`."""
    async with asyncio.timeout(seconds):
        while not await predicate():
            await asyncio.sleep(0.1)


@pytest.fixture
async def served(
    tmp_path: Path, data_dir: Path, pg_url: str
) -> AsyncIterator[tuple[Client, Watcher, Path, list[Change]]]:
    vault = Path(shutil.copytree(FIXTURES / "notes", tmp_path / "vault"))
    settings = Settings(
        data_dir=data_dir, item_store="postgresql", database_url=pg_url, rate_limit_per_minute=0
    )
    assert (await run_import(settings, "notes", [vault], False)).files_failed == 0
    mcp, host = build_server(settings)
    changes: list[Change] = []
    host.changes.subscribe(changes.append)
    watcher = Watcher(
        data_dir,
        host.backend.items.watched(),
        host.changes,
        users=["local"],
        max_file_bytes=1 << 20,
        rescan_s=0.5,
    )
    watcher.start()
    try:
        async with Client(mcp) as client:
            await until(lambda: _batches(watcher, 0))  # the catch-up of the folder
            yield client, watcher, vault, changes
    finally:
        await watcher.stop()
        await host.close()


async def _batches(watcher: Watcher, than: int) -> bool:
    return watcher.batches > than


async def _idle(watcher: Watcher) -> bool:
    return not any(len(p) for p in watcher.pending.values())


async def hits(client: Client, query: str) -> list[dict[str, Any]]:
    return list((await call(client, "notes_search", query=query))["results"])


async def test_a_file_edited_on_disk_is_found_in_postgresql_by_its_new_text(
    served: Any, data_dir: Path
) -> None:
    client, _, vault, changes = served
    note = vault / "recipes" / "sourdough-country-loaf.md"
    uri = (await hits(client, "country loaf levain"))[0]["uri"]
    note.write_text(note.read_text(encoding="utf-8") + "\nA wombat named Gregory guards the levain.\n")

    async def found() -> bool:
        return [hit["uri"] for hit in await hits(client, "wombat Gregory")] == [uri]

    await until(found)
    got = await call(client, "notes_get", note_id=uri, retrieval={"mode": "full"})
    assert got["meta"]["version"] == 2 and "wombat named Gregory" in got["content"]
    assert any(uri in change.updated for change in changes)
    assert not database_path(data_dir, "local", "notes").exists()  # PostgreSQL only


async def test_a_deleted_note_is_gone_from_postgresql_search_and_get(served: Any) -> None:
    client, _, vault, changes = served
    uri = (await hits(client, "country loaf levain"))[0]["uri"]
    (vault / "recipes" / "sourdough-country-loaf.md").unlink()

    async def gone() -> bool:
        return uri not in [hit["uri"] for hit in await hits(client, "country loaf levain")]

    await until(gone)
    assert (await client.call_tool("notes_get", {"note_id": uri})).is_error
    assert any(uri in change.removed for change in changes)


async def test_a_folder_removed_takes_its_notes_and_a_new_file_is_added(served: Any) -> None:
    client, _, vault, changes = served
    recipes = {hit["uri"] for hit in await hits(client, "tortilla")}
    shutil.rmtree(vault / "recipes")
    (vault / "kiwi.md").write_text("# Kiwi\n\nThe zorbulon kiwi is a flightless bird.\n", encoding="utf-8")

    every_recipe = len(list((FIXTURES / "notes" / "recipes").iterdir()))

    async def settled() -> bool:  # searches see it, and the watcher has told its changes
        left = {hit["uri"] for hit in await hits(client, "tortilla")}
        told = {uri for change in changes for uri in change.removed}
        return (
            len(left) == len(recipes) - 1
            and bool(await hits(client, "zorbulon"))
            and len(told) >= every_recipe
        )

    await until(settled)
    removed = {uri for change in changes for uri in change.removed}
    assert len(removed) == every_recipe  # every recipe file, no other
    assert recipes - removed and any(change.added for change in changes)


async def test_a_note_written_by_the_tools_is_indexed_once_beside_the_watcher(served: Any) -> None:
    client, watcher, _, changes = served
    created = await call(client, "notes_create", title="Okapi", content="The okapi is a forest giraffe.")
    updated = await call(client, "notes_update", note_id=created["uri"], append="It eats leaves.")
    settled = watcher.batches
    await until(lambda: _batches(watcher, settled))  # the watcher saw the file the writer wrote
    await until(lambda: _idle(watcher))
    got = await call(client, "notes_get", note_id=created["uri"], retrieval={"mode": "full"})
    assert created["version"] == 1 and updated["version"] == 2 and got["meta"]["version"] == 2
    assert not any(created["uri"] in change.updated for change in changes)
