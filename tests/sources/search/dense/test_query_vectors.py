"""A query's vector is embedded once, however many sources ask for it at the same time."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from knowledge_mcp.sources.search.dense.embedder import Embedder, Vectors, embedder
from knowledge_mcp.sources.search.dense.query_vectors import QueryVectors

pytestmark = pytest.mark.anyio


class Counted:
    """The real model, counting the queries it embeds."""

    def __init__(self, model: Embedder) -> None:
        self.model, self.model_id, self.dim = model, model.model_id, model.dim
        self.queries: list[str] = []

    def embed_windows(self, texts: Sequence[str]) -> list[Vectors]:
        return self.model.embed_windows(texts)

    def embed_query(self, text: str) -> Vectors:
        self.queries.append(text)
        return self.model.embed_query(text)


@pytest.fixture
def counted() -> Counted:
    model = embedder()
    assert model is not None
    return Counted(model)


async def test_five_sources_asking_at_once_share_one_embedding(counted: Counted) -> None:
    cache = QueryVectors()
    vectors = await asyncio.gather(*(cache.get(counted, "who fixed the heating?") for _ in range(5)))
    assert counted.queries == ["who fixed the heating?"]
    assert all(np.array_equal(v, vectors[0]) for v in vectors)
    assert np.array_equal(vectors[0], counted.model.embed_query("who fixed the heating?"))


async def test_only_the_latest_texts_are_kept(counted: Counted) -> None:
    cache = QueryVectors(size=2)
    for text in ("one", "two", "three", "two", "one"):
        await cache.get(counted, text)
    assert counted.queries == ["one", "two", "three", "one"]


def test_a_vector_embedded_under_one_event_loop_serves_the_next(counted: Counted) -> None:
    cache = QueryVectors()
    first = asyncio.run(cache.get(counted, "sourdough starter"))
    second = asyncio.run(cache.get(counted, "sourdough starter"))
    assert counted.queries == ["sourdough starter"] and np.array_equal(first, second)
