"""The semantic floor: whether an answer found by meaning alone is worth giving.

When none of the query's words occur (or bm25 did not run: `mode = semantic`), only the
embeddings speak for an answer, and a cosine means different things in different collections:
queries of random letters reach a best cosine of 0.20-0.41 over SciFact's abstracts but
0.08-0.22 over a few dozen everyday notes, where a paraphrased question's note can stand at
0.28. So the bar is read from the collection itself: the best cosines that `PROBES` queries
of random letters (fixed, `probes()`) reach in it, the highest of them plus `MARGIN`. A query
whose best cosine is under the bar does no better than nonsense there, and finds nothing.

The bar is kept in the vector store's caches until its stamp changes (`VectorStore.stamp`);
the probes' vectors are embedded once per model. How `PROBES` and `MARGIN` were fitted, on
SciFact and the sample notes (the fit set; the check set of everyday questions is kept out of
it): `experiments/dense/evidence.py`, `docs/performance.md` ("The semantic floor").
"""

from __future__ import annotations

import asyncio
import random
import string

from ...storage.vector_store import Vectors, VectorStore
from .model import Embedder

PROBES = 32
"""Queries of random letters per collection."""
MARGIN = 0.03
"""Added to the probes' highest best cosine: the smallest margin that keeps at most 1 % of
other queries of random letters on the fit set (0.6 %; 2.6 % at 0), while 99.7 % of the
questions answered there are kept (96.7 % under the former absolute floor of 0.40)."""
PROBE_SEED = 2028
CACHE_KEY = "semantic_floor"
_VECTORS: dict[str, list[Vectors]] = {}


def probes(count: int = PROBES, seed: int = PROBE_SEED) -> list[str]:
    """Queries of 1-4 'words' of 5-9 random lowercase letters: nothing any collection means."""
    rng = random.Random(seed)
    return [
        " ".join(
            "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(5, 9)))
            for _ in range(rng.randint(1, 4))
        )
        for _ in range(count)
    ]


def bar_of(probe_best: list[float]) -> float:
    """The bar, from the probes' best cosines in a collection."""
    return max(probe_best, default=0.0) + MARGIN


async def probe_vectors(model: Embedder) -> list[Vectors]:
    """The probes' query vectors (embedded once per model, off the event loop)."""
    held = _VECTORS.get(model.model_id)
    if held is None:
        held = _VECTORS[model.model_id] = await asyncio.to_thread(
            lambda: [model.embed_query(t) for t in probes()]
        )
    return held


async def bar(store: VectorStore, model: Embedder) -> float:
    """The best cosine a query needs in this collection to be answered by meaning alone."""
    stamp = await store.stamp()
    known: dict[object, tuple[tuple[object, ...], float]] = store.caches.setdefault(CACHE_KEY, {})
    held = known.get(store.key)
    if held is not None and held[0] == stamp:
        return held[1]
    best = []
    for vector in await probe_vectors(model):
        hits = await store.nearest(vector, 1)
        if len(hits.best):
            best.append(float(hits.best.max()))
    value = bar_of(best)
    known[store.key] = (stamp, value)
    return value
