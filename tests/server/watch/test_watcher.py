"""The watcher in process: a real server's pool and databases, real files changed on disk."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from loguru import logger
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.watch import Change, Watcher
from tests.conftest import FIXTURES, call, import_into

pytestmark = pytest.mark.anyio


async def until(predicate: Any, seconds: float = 15.0) -> None:
    """Wait for an async predicate to hold (polled), or fail after `seconds`."""
    async with asyncio.timeout(seconds):
        while not await predicate():
            await asyncio.sleep(0.1)


@pytest.fixture
async def served(tmp_path: Path, data_dir: Path) -> AsyncIterator[tuple[Client, Watcher, Path, list[Change]]]:
    vault = Path(shutil.copytree(FIXTURES / "notes", tmp_path / "vault"))
    await import_into(data_dir, "notes", vault)
    mcp, host = build_server(Settings(data_dir=data_dir, rate_limit_per_minute=0))
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
            await until(lambda: _batches(watcher))  # the catch-up of the folder
            yield client, watcher, vault, changes
    finally:
        await watcher.stop()
        await host.pool.close()


async def _batches(watcher: Watcher) -> bool:
    return watcher.batches > 0


async def hits(client: Client, query: str) -> list[dict[str, Any]]:
    return list((await call(client, "notes_search", query=query))["results"])


async def test_a_file_edited_on_disk_is_found_by_its_new_text(served: Any) -> None:
    client, _, vault, changes = served
    (vault / "edited.md").write_text("# Edited\n\nA wombat named Gregory lives here.\n", encoding="utf-8")

    async def found() -> bool:
        return bool(await hits(client, "wombat Gregory"))

    await until(found)
    assert changes[-1].added and changes[-1].source == "notes" and changes[-1].user_id == "local"


async def test_a_deleted_file_disappears_from_search_and_get(served: Any) -> None:
    client, _, vault, changes = served
    page = await hits(client, "sourdough")
    assert page, "the fixture vault has a sourdough note"
    uri = page[0]["uri"]
    files = [p for p in vault.rglob("*") if p.is_file() and "sourdough" in p.read_text("utf-8").lower()]
    assert files
    for path in files:
        path.unlink()

    async def gone() -> bool:
        return not await hits(client, "sourdough")

    await until(gone)
    result = await client.call_tool("notes_get", {"note_id": uri})
    assert result.is_error
    assert any(uri in change.removed for change in changes)


async def test_a_renamed_file_is_the_same_text_under_a_new_item(served: Any) -> None:
    client, _, vault, changes = served
    (vault / "kiwi.md").write_text("# Kiwi\n\nThe zorbulon kiwi is a flightless bird.\n", encoding="utf-8")
    await until(lambda: _found(client, "zorbulon"))
    before = (await hits(client, "zorbulon"))[0]["uri"]
    (vault / "kiwi.md").rename(vault / "birds.md")

    async def moved() -> bool:
        uris = [hit["uri"] for hit in await hits(client, "zorbulon")]
        return len(uris) == 1 and before not in uris

    await until(moved)
    assert any(before in change.removed for change in changes)


async def test_a_note_written_through_notes_update_is_indexed_once(served: Any) -> None:
    client, watcher, _, changes = served
    created = await call(client, "notes_create", title="Okapi", content="The okapi is a forest giraffe.")
    assert created["version"] == 1
    updated = await call(client, "notes_update", note_id=created["uri"], append="It eats leaves.")
    assert updated["version"] == 2
    settled = watcher.batches
    await until(lambda: _more(watcher, settled))  # the watcher saw the file the writer wrote
    await until(lambda: _idle(watcher))
    got = await call(client, "notes_get", note_id=created["uri"], retrieval={"mode": "full"})
    assert got["meta"]["version"] == 2
    assert not any(created["uri"] in change.updated for change in changes)


async def test_a_file_that_fails_to_parse_is_logged_without_its_text_and_the_rest_go_on(served: Any) -> None:
    client, _, vault, _ = served
    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(str(message)), level="DEBUG")
    try:
        (vault / "broken.md").write_bytes(b"---\ntitle: [unclosed secret-word\n---\nbody of a broken note\n")
        (vault / "fine.md").write_text("# Fine\n\nAn axolotl regrows its limbs.\n", encoding="utf-8")
        await until(lambda: _found(client, "axolotl regrows"))
        await until(lambda: _logged(lines, "broken.md"))
    finally:
        logger.remove(sink)
    failed = [line for line in lines if "broken.md" in line]
    assert "failed: not valid YAML" in failed[0]
    assert not any("secret-word" in line or "broken note" in line for line in lines)


async def _found(client: Client, query: str) -> bool:
    return bool(await hits(client, query))


async def _more(watcher: Watcher, than: int) -> bool:
    return watcher.batches > than


async def _idle(watcher: Watcher) -> bool:
    return not any(len(p) for p in watcher.pending.values())


async def _logged(lines: list[str], text: str) -> bool:
    return any(text in line for line in lines)


async def test_each_user_s_folder_is_re_imported_into_that_user_s_databases_only(
    tmp_path: Path, data_dir: Path
) -> None:
    vaults = {user: tmp_path / user for user in ("ann", "bob")}
    for user, vault in vaults.items():
        vault.mkdir()
        (vault / "start.md").write_text(f"# Start\n\n{user} began here.\n", encoding="utf-8")
        await import_into(data_dir, "notes", vault, user=user)
    _, host = build_server(Settings(data_dir=data_dir))
    changes: list[Change] = []
    host.changes.subscribe(changes.append)
    watcher = Watcher(
        data_dir, host.backend.items.watched(), host.changes, users=None, max_file_bytes=1 << 20, rescan_s=0.5
    )
    watcher.start()
    try:
        await until(lambda: _batches_at_least(watcher, 2))  # both users' catch-up
        (vaults["ann"] / "secret.md").write_text("# Plans\n\nThe quetzal project.\n", encoding="utf-8")
        await until(lambda: _any_added(changes))
    finally:
        await watcher.stop()
        await host.pool.close()
    assert {change.user_id for change in changes if change.added} == {"ann"}
    for user, expected in (("ann", 1), ("bob", 0)):
        with sqlite3.connect(data_dir / "users" / user / "notes.db") as conn:
            found = conn.execute("SELECT count(*) FROM notes_items WHERE content LIKE '%quetzal%'")
            assert found.fetchone()[0] == expected


async def _batches_at_least(watcher: Watcher, count: int) -> bool:
    return watcher.batches >= count


async def _any_added(changes: list[Change]) -> bool:
    return any(change.added for change in changes)


async def test_a_folder_imported_while_serving_is_watched_and_a_vanished_one_is_a_warning(
    tmp_path: Path, data_dir: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "start.md").write_text(f"# Start\n\n{folder.name} began.\n", encoding="utf-8")
    await import_into(data_dir, "notes", first)
    mcp, host = build_server(Settings(data_dir=data_dir, rate_limit_per_minute=0))
    watcher = Watcher(
        data_dir,
        host.backend.items.watched(),
        host.changes,
        users=["local"],
        max_file_bytes=1 << 20,
        rescan_s=0.3,
    )
    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(str(message)), level="WARNING")
    watcher.start()
    try:
        async with Client(mcp) as client:
            await until(lambda: _batches(watcher))
            await import_into(data_dir, "notes", second)  # a new import while the server runs
            await until(lambda: _watching(watcher, 2))
            shutil.rmtree(first)
            await until(lambda: _logged(lines, "is gone; watching the rest"))
            (second / "later.md").write_text("# Later\n\nA pangolin rolled up.\n", encoding="utf-8")
            await until(lambda: _found(client, "pangolin"))
    finally:
        logger.remove(sink)
        await watcher.stop()
        await host.pool.close()
    assert [t.root for t in watcher.targets] == [second.resolve()]


async def _watching(watcher: Watcher, count: int) -> bool:
    return len(watcher.targets) == count
