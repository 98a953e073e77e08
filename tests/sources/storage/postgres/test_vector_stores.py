"""Both `VectorStore`s, fed the same notes and vectors, answer alike: coverage, the chunks
missing vectors, the nearest items with their cosines and best chunks, and the cosines of items
the search did not return (what the hybrid fuser asks for bm25's candidates)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.postgres.embeddings.store import PgVectorStore
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter
from knowledge_mcp.sources.storage.vector_store import Coverage, VectorStore

from .test_vectors import STAMP, unit

pytestmark = pytest.mark.anyio
TITLES = ("Alpha", "Beta", "Gamma", "Delta")


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[VectorStore]:
    db = await open_database(database_path(tmp_path, "alice", "notes"), notes.migrations)
    importer = Importer(notes, db)
    for title in TITLES:
        await importer.write_item(
            Path(f"{title}.md"), ParsedItem("", title, f"text of {title}", STAMP, STAMP)
        )
    try:
        yield SqliteVectorStore(db, notes, notes.migrations)
    finally:
        await db.close()


@pytest.fixture
async def pg_store(store: PgDatabase) -> VectorStore:
    writer = PgItemWriter(store, notes, "alice")
    for title in TITLES:
        await writer.write_item(Path(f"{title}.md"), ParsedItem("", title, f"text of {title}", STAMP, STAMP))
    return PgVectorStore(store, "alice", "notes")


async def answers(vectors: VectorStore) -> dict[str, object]:
    """What the store says, by title (the stores number items and chunks their own way):
    vectors given to three notes, then to the fourth, then a search."""
    before = await vectors.coverage()
    missing = await vectors.missing(0, 10)
    title_of_item = {m.item: m.title for m in missing}
    title_of_chunk = {m.chunk: m.title for m in missing}
    rng = np.random.default_rng(5)
    windows = {title: unit(rng, 2) for title in TITLES}  # two windows a chunk, the same in both
    first, last = missing[:3], missing[3:]
    await vectors.write(
        {f"h-{m.title}": windows[m.title] for m in first}, [(m.chunk, m.item, f"h-{m.title}") for m in first]
    )
    partly, still_missing = await vectors.coverage(), [m.title for m in await vectors.missing(0, 10)]
    await vectors.write(
        {f"h-{m.title}": windows[m.title] for m in last}, [(m.chunk, m.item, f"h-{m.title}") for m in last]
    )
    query = windows["Beta"][1] * 0.9 + windows["Alpha"][0] * 0.1
    query /= np.linalg.norm(query)
    cover, searchable = await vectors.look()
    hits = await vectors.nearest(query, 2)
    nearest = [
        (title_of_item[int(i)], title_of_chunk[int(c)]) for i, c in zip(hits.items, hits.chunks, strict=True)
    ]
    nearest_cosines = [round(float(b), 4) for b in hits.best]
    others = [m.item for m in missing if m.title in ("Gamma", "Delta")] + [999_999]  # no such item
    await vectors.cosines(hits, others)
    known = hits.positions(others)
    return {
        "before": before,
        "partly": partly,
        "still_missing": still_missing,
        "after": cover,
        "searchable": searchable,
        "missing": [m.title for m in await vectors.missing(0, 10)],
        "nearest": nearest,
        "nearest_cosines": nearest_cosines,
        "others": {title_of_item[i]: round(float(hits.best[p]), 4) for i, p in known.items()},
        "expected_others": {t: round(float((windows[t] @ query).max()), 4) for t in ("Gamma", "Delta")},
    }


async def test_both_stores_answer_alike_for_the_same_notes_and_vectors(
    sqlite_store: VectorStore, pg_store: VectorStore
) -> None:
    lite, pg = await answers(sqlite_store), await answers(pg_store)
    assert (lite["before"], lite["partly"], lite["still_missing"]) == (
        Coverage(4, 0),
        Coverage(4, 3),
        ["Delta"],
    )
    assert (lite["after"], lite["searchable"], lite["missing"]) == (Coverage(4, 4), True, [])
    assert lite["nearest"] == [("Beta", "Beta"), ("Alpha", "Alpha")]
    assert lite["others"] == lite["expected_others"]  # the unknown item is left out
    assert pg == lite
