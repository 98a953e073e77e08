"""The PostgreSQL store's vectors as the embedding worker and the dense stage use them: what is
missing, batches written once, a small source found beside a large one in the user's partition."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.postgres.embeddings.vectors import (
    cosines,
    coverage,
    missing,
    nearest,
    write_batch,
)
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter
from knowledge_mcp.sources.storage.vector_store import Coverage

from .test_vectors import STAMP, unit
from .vector_writes import write_vectors

pytestmark = pytest.mark.anyio


async def test_missing_chunks_get_their_vectors_once_and_a_replaced_chunk_gets_none(
    store: PgDatabase,
) -> None:
    writer = PgItemWriter(store, get_source("notes"), "alice")
    for name in ("a", "b", "c"):
        await writer.write_item(
            Path(f"{name}.md"), ParsedItem("", name.upper(), f"text of {name}", STAMP, STAMP)
        )
    assert await coverage(store, "alice", "notes") == Coverage(3, 0)
    rows = await missing(store, "alice", "notes", 0, 10)
    assert [r[2] for r in rows] == ["A", "B", "C"]  # (id, item, title, body), by chunk id
    # "C" is replaced after its chunk was read: its old chunk is gone, so it gets no vectors
    await writer.write_item(Path("c.md"), ParsedItem("", "C", "new text of c", STAMP, STAMP))
    rng = np.random.default_rng(3)
    await write_batch(store, "alice", "notes", [(int(r[0]), int(r[1]), unit(rng, 2)) for r in rows])
    assert await coverage(store, "alice", "notes") == Coverage(3, 2)
    again = await missing(store, "alice", "notes", 0, 10)
    assert [r[2] for r in again] == ["C"]
    await write_batch(store, "alice", "notes", [(int(r[0]), int(r[1]), unit(rng, 1)) for r in rows[:1]])
    assert (await store.fetchone("SELECT count(*) AS n FROM pg_chunk_vectors")) == {
        "n": 4
    }  # kept, not doubled
    assert await coverage(store, "bob", "notes") == Coverage(0, 0)


async def test_a_small_source_is_found_beside_a_large_one_in_the_users_partition(store: PgDatabase) -> None:
    rng = np.random.default_rng(11)
    media = unit(rng, 400)
    for n in range(400):  # the user's large source fills the HNSW index's first candidates
        await write_vectors(
            store, "alice", "media", chunk=10_000 + n, item=5_000 + n, windows=media[n : n + 1]
        )
    notes = unit(rng, 6)
    for n in range(6):
        await write_vectors(store, "alice", "notes", chunk=n + 1, item=n + 1, windows=notes[n : n + 1])
    query = media[0]  # nearest the media vectors, far from the notes
    found = await nearest(store, "alice", "notes", query, 6)
    exact = await nearest(store, "alice", "notes", query, 6, exact=True)
    assert [n.item for n in found] == [n.item for n in exact] and len(found) == 6
    picked = await cosines(store, "alice", "notes", query, [3, 5, 99])
    assert {n.item: n.chunk for n in picked} == {3: 3, 5: 5}  # 99 has no vectors
    for n in picked:
        assert n.cosine == pytest.approx(float(notes[n.item - 1] @ query), abs=1e-5)
