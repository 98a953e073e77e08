"""`serve --watch` through the real server over stdio and a real MCP client: a folder imported by
the real CLI, then edited, deleted from and flooded on disk while the client searches."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import ResourceListChangedNotification, ResourceUpdatedNotification

from tests.conftest import FIXTURES, ROOT, cli_import, serve_args
from tests.server.resources.test_notifications import Inbox, subscribe

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BOUND_S = 15.0
"""A generous bound for one change to become searchable (the bench measures the real latency)."""


async def search(client: Client, query: str, limit: int = 10) -> dict[str, Any]:
    result = await client.call_tool("notes_search", {"query": query, "limit": limit})
    assert not result.is_error, result.content[0].text
    return dict(result.structured_content)


async def until_count(client: Client, query: str, count: int) -> None:
    """Poll the search until it finds `count` notes, within `BOUND_S`."""
    deadline = time.monotonic() + BOUND_S
    while (await search(client, query, 100))["total_estimated"] != count:
        assert time.monotonic() < deadline, f"{query!r}: not {count} hits within {BOUND_S} s"
        await anyio.sleep(0.1)


def imported_vault(tmp_path: Path) -> tuple[Path, Path]:
    vault, data_dir = Path(shutil.copytree(FIXTURES / "notes", tmp_path / "vault")), tmp_path / "data"
    cli_import("notes", vault, data_dir)
    return vault, data_dir


def watching(data_dir: Path) -> StdioServerParameters:
    env = {**os.environ, "KNOWLEDGE_MCP_RATE_LIMIT_PER_MINUTE": "0"}
    return StdioServerParameters(
        command=sys.executable, args=[*serve_args(data_dir), "--watch"], cwd=ROOT, env=env
    )


async def test_an_edit_a_delete_and_200_new_files_on_disk_reach_search_while_it_answers(
    tmp_path: Path,
) -> None:
    vault, data_dir = imported_vault(tmp_path)
    note = vault / "recipes" / "sourdough-country-loaf.md"
    answered: list[int] = []
    with anyio.fail_after(120):
        async with Client(watching(data_dir)) as client:
            assert (await search(client, "sourdough"))["results"]
            note.write_text(note.read_text("utf-8") + "\nAdd a pinch of zanthoxylum.\n", encoding="utf-8")
            await until_count(client, "zanthoxylum", 1)
            uri = (await search(client, "zanthoxylum"))["results"][0]["uri"]

            note.unlink()
            await until_count(client, "zanthoxylum", 0)
            assert uri not in [hit["uri"] for hit in (await search(client, "sourdough", 100))["results"]]
            gone = await client.call_tool("notes_get", {"note_id": uri})
            assert gone.is_error

            async def keep_searching() -> None:
                while True:
                    page = await search(client, "quokka OR sourdough")
                    answered.append(page["count"])
                    await anyio.sleep(0.02)

            async with anyio.create_task_group() as group:
                group.start_soon(keep_searching)
                flood = vault / "flood"
                flood.mkdir()
                for n in range(200):
                    (flood / f"quokka-{n:03}.md").write_text(f"# Quokka {n}\n\nQuokka sighting number {n}.\n")
                await until_count(client, "quokka", 200)
                group.cancel_scope.cancel()
    # searches went on while the flood was indexed, each answered without an error (`search`
    # asserts it); how many fit in depends on the machine's speed, so only that there were some
    assert answered


async def test_a_file_added_on_disk_tells_the_client_the_list_changed_and_an_edit_updates_its_subscriber(
    tmp_path: Path,
) -> None:
    vault, data_dir = imported_vault(tmp_path)
    note = vault / "recipes" / "sourdough-country-loaf.md"
    inbox = Inbox()
    with anyio.fail_after(120):
        async with Client(watching(data_dir), mode="legacy", message_handler=inbox) as client:
            uri = (await search(client, "sourdough country loaf"))["results"][0]["uri"]
            await subscribe(client, uri)
            note.write_text(note.read_text("utf-8") + "\nA spoon of tahini.\n", encoding="utf-8")
            updated = await inbox.next_of(ResourceUpdatedNotification)
            assert str(updated.params.uri) == uri
            assert not [m for m in inbox.received if isinstance(m, ResourceListChangedNotification)]

            (vault / "wombats.md").write_text("# Wombats\n\nWombats dig burrows.\n", encoding="utf-8")
            await inbox.next_of(ResourceListChangedNotification)
            await until_count(client, "wombats", 1)
