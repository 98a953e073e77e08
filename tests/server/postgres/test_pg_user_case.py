"""The PostgreSQL item store keeps ids as authenticated too: `Bob` and `bob` are two partitions,
and neither reads the other's items (nor the SQLite files, whose folders differ as well)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.storage.postgres.schema import partition_name
from tests.conftest import call
from tests.server.postgres.conftest import Importing

pytestmark = pytest.mark.anyio

NOTES = {"Bob": "Bob keeps zanzibarite crystals", "bob": "bob bakes quokkaberry pies"}


async def titles(client: Any, query: str) -> list[str]:
    return [hit["title"] for hit in (await call(client, "notes_search", query=query))["results"]]


@pytest.mark.parametrize("item_store", ["postgresql", "sqlite"])
async def test_users_whose_ids_differ_only_in_case_read_only_their_own_items(
    pg_servers: Any, import_both: Importing, tmp_path: Path, item_store: str
) -> None:
    for user, text in NOTES.items():
        folder = tmp_path / f"notes-{user}"
        folder.mkdir()
        (folder / "note.md").write_text(f"# {user} note\n\n{text}.\n", encoding="utf-8")
        await import_both("notes", folder, user=user)
    async with pg_servers(item_store, user="Bob") as upper:
        assert await titles(upper, "zanzibarite") == ["Bob note"]
        assert await titles(upper, "quokkaberry") == []
    async with pg_servers(item_store, user="bob") as lower:
        assert await titles(lower, "quokkaberry") == ["bob note"]
        assert await titles(lower, "zanzibarite") == []
    assert partition_name("pg_items", "Bob") != partition_name("pg_items", "bob")
