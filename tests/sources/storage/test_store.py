"""The `Store` protocol: both stores implement every operation, and the SQLite store's named
reads answer from a real imported database (the PostgreSQL store's are in tests/server/postgres)."""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from knowledge_mcp.sources.media.source import source as media
from knowledge_mcp.sources.prompts.source import source as prompts
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.postgres.store import PgStore
from knowledge_mcp.sources.storage.store import Store
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from tests.conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio


def operations(cls: type) -> dict[str, list[str]]:
    """The public methods of `cls` and their parameter names."""
    return {
        name: list(inspect.signature(member).parameters)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


@pytest.mark.parametrize("store", [SqliteStore, PgStore])
def test_each_store_has_every_operation_of_the_protocol_with_its_parameters(store: type) -> None:
    wanted = operations(Store)
    assert wanted and {name: operations(store).get(name) for name in wanted} == wanted


@pytest.fixture
async def prompts_store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    await import_into(tmp_path, "prompts", FIXTURES / "prompts")
    db = await open_database(database_path(tmp_path, "local", "prompts"), prompts.migrations)
    yield SqliteStore(db, "prompts")
    await db.close()


async def test_the_named_reads_answer_from_the_users_items(prompts_store: SqliteStore) -> None:
    titles = await prompts_store.titles()
    items = await prompts_store.items()
    assert len(titles) == len(items) >= 5
    assert [t["item_id"] for t in titles] == [i["item_id"] for i in items]  # import order
    first = titles[0]
    assert [r["title"] for r in await prompts_store.titles([first["item_id"], "nope"])] == [first["title"]]
    found = await prompts_store.item_by_title(str(first["title"]).upper())
    assert found is not None and found["item_id"] == first["item_id"]
    assert await prompts_store.item_by_title("no such prompt") is None
    origin = await prompts_store.item_by_origin(str(items[0]["origin"]))
    assert origin is not None and origin["item_id"] == items[0]["item_id"]
    recent = await prompts_store.recent(2)
    assert len(recent) == 2 and recent[0]["last_modified"] >= recent[1]["last_modified"]


async def test_chunks_field_spans_and_counts_are_read_per_item(prompts_store: SqliteStore) -> None:
    item = (await prompts_store.items())[0]
    chunks = await prompts_store.chunks_of(int(item["id"]))
    assert chunks and await prompts_store.has_chunk(str(item["item_id"]), str(chunks[0]["chunk_uuid"]))
    assert not await prompts_store.has_chunk(str(item["item_id"]), "not-a-chunk")
    spans = await prompts_store.field_spans(["details"])
    assert spans and {s["field"] for s in spans} == {"details"} and all(s["start"] <= s["end"] for s in spans)
    counts = await prompts_store.counts_by("author")
    assert sum(n for _, n in counts) == len(await prompts_store.items())
    authors = [json.loads(i["meta"]).get("author") for i in await prompts_store.items()]
    assert dict(counts) == {a: authors.count(a) for a in set(authors)}


async def test_a_meta_key_that_is_not_a_plain_name_is_refused_before_any_sql(tmp_path: Path) -> None:
    db = await open_database(database_path(tmp_path, "local", "media"), media.migrations)
    try:
        with pytest.raises(ValueError, match="meta key"):
            await SqliteStore(db, "media").counts_by("x'); DROP TABLE media_items; --")
    finally:
        await db.close()
