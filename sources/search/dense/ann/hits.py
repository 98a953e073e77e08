"""One query's answer from the approximate index (`store.py`): the nearest windows, their items.

The index gives the nearest windows' keys and cosines; a key is a text, which one or more
chunks have (`store.Layout`): each item keeps its best window's cosine and chunk. The fuser also
asks for items the index did not return (bm25's candidates): their windows' vectors are read
back from the index and their best cosine computed exactly (`DenseHits.others`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....storage.vector_store import DenseHits, Floats, Vectors
from .store import WINDOW_BITS, AnnIndex, Ints, window_keys

WINDOWS_PER_ITEM = 3
"""Windows asked of the index per item wanted (an item may have several near windows)."""


def search(ann: AnnIndex, query: Vectors, n: int) -> DenseHits:
    """The (about) `n` items nearest to `query`, nearest first."""
    layout = ann.layout
    count = min(len(ann.index), max(1, n * WINDOWS_PER_ITEM))
    if not count:
        return _hits(ann, query, np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0, np.int64))
    matches = ann.index.search(query, count, threads=1)
    texts = (np.asarray(matches.keys, dtype=np.uint64) >> np.uint64(WINDOW_BITS)).astype(np.int64)
    cosines = (1.0 - np.asarray(matches.distances, dtype=np.float32)).astype(np.float32)
    # Every chunk having each found text (a text is usually one chunk's; copies share it).
    left = np.searchsorted(layout.texts, texts, "left")
    counts = np.searchsorted(layout.texts, texts, "right") - left
    rows = (
        np.repeat(left, counts) + np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    )
    row_cosines = np.repeat(cosines, counts)
    # Best first, then each item's first row: its best window (ties: the lower chunk).
    order = np.lexsort((layout.chunks[rows], -row_cosines))
    rows, row_cosines = rows[order], row_cosines[order]
    _, first = np.unique(layout.items[rows], return_index=True)
    first = np.sort(first)[:n]
    return _hits(ann, query, layout.items[rows[first]], row_cosines[first], layout.chunks[rows[first]])


def _hits(ann: AnnIndex, query: Vectors, items: Ints, best: Any, chunks: Ints) -> DenseHits:
    """The nearest items; other items' cosines are computed exactly from their windows'
    vectors in the index (`_exact`), when the fuser asks for them."""
    hits = DenseHits.of(items, best, chunks, query)
    hits.others = lambda rowids: DenseHits.of(*_exact(ann, query, np.array(rowids, dtype=np.int64)), query)
    return hits


def _exact(ann: AnnIndex, query: Vectors, items: Ints) -> tuple[Ints, Floats, Ints]:
    """These items' best cosines and chunks, from their windows' vectors in the index (items
    without vectors are left out)."""
    layout = ann.layout
    by_item = layout.by_item
    ordered = layout.items[by_item]
    left = np.searchsorted(ordered, items, "left")
    counts = np.searchsorted(ordered, items, "right") - left
    rows = by_item[
        np.repeat(left, counts) + np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    ]
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0, np.int64)
    keys = window_keys(layout.texts[rows], layout.windows[rows])
    got = ann.index.get(keys)
    vectors: list[Any] = list(got) if isinstance(got, tuple) else [got]
    present = np.array([v is not None for v in vectors], dtype=bool)
    window_cos = np.full(len(keys), -1.0, np.float32)
    if present.any():
        matrix = np.vstack([np.asarray(v, np.float32) for v in vectors if v is not None])
        window_cos[present] = matrix @ query
    row_of_window = np.repeat(np.arange(len(rows)), np.minimum(layout.windows[rows], (1 << WINDOW_BITS) - 1))
    row_best = np.full(len(rows), -1.0, np.float32)
    np.maximum.at(row_best, row_of_window, window_cos)
    order = np.lexsort((layout.chunks[rows], -row_best))
    rows, row_best = rows[order], row_best[order]
    _, first = np.unique(layout.items[rows], return_index=True)
    return layout.items[rows[first]], row_best[first], layout.chunks[rows[first]]
