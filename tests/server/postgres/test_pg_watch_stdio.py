"""`serve --watch --item-store postgresql` through the real server over stdio and a real MCP
client: a folder imported into PostgreSQL by the real CLI, then edited and added to on disk;
the subscriber is told, and search finds the new text."""

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

from tests.conftest import FIXTURES, ROOT, serve_args
from tests.server.resources.test_notifications import Inbox, subscribe
from tests.test_cli import cli

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BOUND_S = 15.0


async def search(client: Client, query: str) -> list[dict[str, Any]]:
    result = await client.call_tool("notes_search", {"query": query})
    assert not result.is_error, result.content[0].text
    return list(result.structured_content["results"])


async def until_found(client: Client, query: str, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + BOUND_S
    while len(hits := await search(client, query)) != count:
        assert time.monotonic() < deadline, f"{query!r}: {hits} not {count} hits within {BOUND_S} s"
        await anyio.sleep(0.1)
    return hits


def watching(data_dir: Path, pg_url: str) -> StdioServerParameters:
    env = {**os.environ, "KNOWLEDGE_MCP_RATE_LIMIT_PER_MINUTE": "0"}
    store = ["--item-store", "postgresql", "--database-url", pg_url]
    return StdioServerParameters(
        command=sys.executable, args=[*serve_args(data_dir), *store, "--watch"], cwd=ROOT, env=env
    )


async def test_an_edit_and_a_new_file_reach_postgresql_search_and_the_subscriber(
    tmp_path: Path, pg_url: str
) -> None:
    vault, data_dir = Path(shutil.copytree(FIXTURES / "notes", tmp_path / "vault")), tmp_path / "data"
    store = ["--data-dir", str(data_dir), "--item-store", "postgresql", "--database-url", pg_url]
    assert cli("import", "notes", str(vault), *store).returncode == 0
    note = vault / "recipes" / "sourdough-country-loaf.md"
    inbox = Inbox()
    with anyio.fail_after(120):
        async with Client(watching(data_dir, pg_url), mode="legacy", message_handler=inbox) as client:
            uri = (await search(client, "sourdough country loaf"))[0]["uri"]
            await subscribe(client, uri)
            note.write_text(note.read_text("utf-8") + "\nA spoon of zanthoxylum.\n", encoding="utf-8")
            updated = await inbox.next_of(ResourceUpdatedNotification)
            assert str(updated.params.uri) == uri
            assert [hit["uri"] for hit in await until_found(client, "zanthoxylum", 1)] == [uri]

            (vault / "wombats.md").write_text("# Wombats\n\nWombats dig burrows.\n", encoding="utf-8")
            await inbox.next_of(ResourceListChangedNotification)
            await until_found(client, "wombats", 1)
    assert not (data_dir / "users" / "local" / "notes.db").exists()  # PostgreSQL only
