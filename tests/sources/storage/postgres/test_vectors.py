"""Dense vectors in the PostgreSQL store: pgvector's nearest items agree with an exact scan."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.postgres.embeddings.vectors import has_pgvector, nearest
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.schema import DIM
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter
from tests.pgvector_probe import pgvector_in_use

from .vector_writes import write_vectors

pytestmark = pytest.mark.anyio
STAMP = "2026-01-01T00:00:00+00:00"


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


async def test_the_nearest_items_by_pgvector_are_the_exact_ones(store: PgDatabase) -> None:
    # the test server ships pgvector; where it cannot run on this CPU, both searches are exact
    assert await has_pgvector(store) == pgvector_in_use()
    rng = np.random.default_rng(7)
    vectors = unit(rng, 120)
    for n in range(60):  # 60 items of one chunk, two windows each
        await write_vectors(
            store, "alice", "notes", chunk=1000 + n, item=n, windows=vectors[2 * n : 2 * n + 2]
        )
    query = vectors[10] * 0.8 + unit(rng, 1)[0] * 0.2
    query /= np.linalg.norm(query)
    expected = [int(i) // 2 for i in np.argsort(-(vectors @ query))]
    expected = list(dict.fromkeys(expected))[:10]
    approximate = await nearest(store, "alice", "notes", query, 10)
    exact = await nearest(store, "alice", "notes", query, 10, exact=True)
    assert [n.item for n in exact] == expected
    assert [n.item for n in approximate] == expected
    assert approximate[0].item == 5 and approximate[0].chunk == 1005
    assert approximate[0].cosine == pytest.approx(float(vectors[10] @ query), abs=1e-5)
    assert await nearest(store, "bob", "notes", query, 10) == []  # another user's vectors stay theirs


async def test_replacing_an_item_forgets_its_vectors(store: PgDatabase) -> None:
    writer = PgItemWriter(store, get_source("notes"), "alice")
    await writer.write_item(Path("a.md"), ParsedItem("", "A", "first text", STAMP, STAMP))
    row = await store.fetchone("SELECT id, item FROM pg_chunks")
    assert row is not None
    await write_vectors(store, "alice", "notes", row["id"], row["item"], unit(np.random.default_rng(1), 1))
    assert await store.fetchone("SELECT count(*) AS n FROM pg_chunk_vectors") == {"n": 1}
    await writer.write_item(Path("a.md"), ParsedItem("", "A", "second text", STAMP, STAMP))
    assert await store.fetchone("SELECT count(*) AS n FROM pg_chunk_vectors") == {"n": 0}
