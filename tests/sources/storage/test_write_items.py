"""`Importer.write_items`: a batch in one transaction writes exactly what `write_item` writes one by one."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.bench.corpus import generate
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage import importing
from knowledge_mcp.sources.storage.db import Database, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.items import ParsedItem

ITEM_COLUMNS = (
    "id, item_id, origin, source_path, title, content, content_hash, created_at, last_modified, "
    + ("version, tags, meta")
)
CHUNK_COLUMNS = "id, item_rowid, chunk_index, chunk_uuid, field, start_offset, end_offset, title, body, meta"


async def dump(db: Database, p: str) -> dict[str, Any]:
    """Every row that matters (not `imported_at`, a clock) and what the FTS index answers."""
    items = [tuple(r) for r in await db.fetchall(f"SELECT {ITEM_COLUMNS} FROM {p}_items ORDER BY id")]
    chunks = [tuple(r) for r in await db.fetchall(f"SELECT {CHUNK_COLUMNS} FROM {p}_chunks ORDER BY id")]
    hits = {
        term: [
            r[0]
            for r in await db.fetchall(
                f"SELECT rowid FROM {p}_chunks_fts WHERE {p}_chunks_fts MATCH ? ORDER BY rowid", (term,)
            )
        ]
        for term in ("the", "system", "data OR garden", '"of the"')
    }
    await db.fetchall(f"INSERT INTO {p}_chunks_fts({p}_chunks_fts) VALUES ('integrity-check')")
    return {"items": items, "chunks": chunks, "hits": hits}


def edited(item: ParsedItem) -> ParsedItem:
    return dataclasses.replace(item, content=item.content + " Edited afterwards.", chunks=None)


@pytest.mark.anyio
@pytest.mark.parametrize("source", ["notes", "chats", "prompts"])
async def test_a_batch_writes_the_same_rows_ids_and_index_as_item_by_item(
    tmp_path: Path, source: str
) -> None:
    corpus = generate(600, 5)
    items = [(Path(f"f/{i}.md"), b.item) for i, b in enumerate(b for b in corpus.items if b.source == source)]
    assert len(items) >= 3
    # A second round: the first item changed, the rest unchanged, one new item.
    second = [(items[0][0], edited(items[0][1])), *items[1:], (Path("f/new.md"), items[1][1])]
    dumps = []
    outcomes = []
    for how in ("one_by_one", "batched"):
        db = await open_database(tmp_path / how / f"{source}.db", SOURCES[source].migrations)
        importer = Importer(SOURCES[source], db)
        try:
            rounds = []
            for batch in (items, second):
                if how == "batched":
                    rounds.append(await importer.write_items(batch))
                else:
                    rounds.append([await importer.write_item(path, item) for path, item in batch])
            outcomes.append(rounds)
            dumps.append(await dump(db, source))
        finally:
            await db.close()
    assert outcomes[0] == outcomes[1]
    assert outcomes[1][0] == ["added"] * len(items)
    assert outcomes[1][1] == ["updated"] + ["unchanged"] * (len(items) - 1) + ["added"]
    assert dumps[0] == dumps[1]
    assert dumps[1]["hits"]["the"], "the index answers"


@pytest.mark.anyio
async def test_a_batch_naming_one_origin_twice_keeps_the_later_version(tmp_path: Path) -> None:
    item = generate(300, 2).items[0].item
    db = await open_database(tmp_path / "notes.db", SOURCES["notes"].migrations)
    try:
        outcomes = await Importer(SOURCES["notes"], db).write_items(
            [(Path("a.md"), item), (Path("a.md"), edited(item))]
        )
        rows = await db.fetchall("SELECT content, version FROM notes_items")
    finally:
        await db.close()
    assert outcomes == ["added", "updated"]
    assert [(r["content"], r["version"]) for r in rows] == [(edited(item).content, 2)]


async def segments(db: Database, p: str) -> int:
    row = await db.fetchone(f"SELECT count(DISTINCT segid) FROM {p}_chunks_fts_idx")
    assert row is not None
    return int(row[0])


@pytest.mark.anyio
async def test_a_large_import_merges_the_index_into_one_segment_and_answers_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importing, "OPTIMIZE_MIN_CHUNKS", 50)
    corpus = generate(600, 3)
    items = [(Path(f"bench/{n}"), b.item) for n, b in enumerate(corpus.items) if b.source == "notes"]
    db = await open_database(tmp_path / "notes.db", SOURCES["notes"].migrations)
    try:
        importer = Importer(SOURCES["notes"], db)
        for at in range(0, len(items), 25):  # a transaction per batch: a segment each (5 of them,
            await importer.write_items(items[at : at + 25])  # fewer than FTS5 merges by itself)
        assert await segments(db, "notes") > 1
        before = await dump(db, "notes")
        assert await importer.optimize_if_large()
        assert await segments(db, "notes") == 1
        assert await dump(db, "notes") == before  # same rows, same answers, index intact
        # A small import into the now large source leaves the merging to FTS5.
        await importer.write_items([(Path("bench/extra"), edited(items[0][1]))])
        assert not await importer.optimize_if_large()
    finally:
        await db.close()


@pytest.mark.anyio
async def test_new_items_after_the_largest_possible_rowid_still_get_their_own_chunks(tmp_path: Path) -> None:
    """A batch names its new items' rowids (one more than the largest); where the largest leaves
    no room, SQLite picks them, and each item still gets its own chunks."""
    items = [b.item for b in generate(300, 2).items if b.source == "notes"][:3]  # two are written
    db = await open_database(tmp_path / "notes.db", SOURCES["notes"].migrations)
    try:
        importer = Importer(SOURCES["notes"], db)
        await db.write(
            "INSERT INTO notes_items (id, item_id, origin, source_path, title, content, content_hash,"
            " created_at, last_modified, imported_at) VALUES (?, 'x', 'last.md', 'last.md', 'Last', 'last',"
            " 'h', 'c', 'm', 'i')",
            (importing.MAX_ROWID,),
        )
        outcomes = await importer.write_items([(Path("a.md"), items[1]), (Path("b.md"), items[2])])
        rows = await db.fetchall(
            "SELECT i.origin, i.content, c.body FROM notes_items i JOIN notes_chunks c ON c.item_rowid = i.id"
            " WHERE c.chunk_index = 0 ORDER BY i.origin"
        )
    finally:
        await db.close()
    assert outcomes == ["added", "added"]
    assert [r["origin"] for r in rows] == ["a.md", "b.md"]
    assert all(r["body"] == r["content"][: len(r["body"])] for r in rows)
