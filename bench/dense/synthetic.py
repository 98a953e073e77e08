"""Synthetic unit vectors and the installed model, for the dense bench (`speed`, `ann`)."""

from __future__ import annotations

import numpy as np

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.search.dense.embedder import Embedder, embedder, unavailable

from ..evaluation import spread

BLOCK = 100_000


def stats(ms: list[float]) -> dict[str, float]:
    return spread(ms, 3)


def the_model() -> Embedder:
    model = embedder()
    if model is None:
        raise KnowledgeError(f"--dense: {unavailable()}")
    return model


def unit_matrix(n: int, dim: int, seed: int = 1) -> np.ndarray:
    """`n` random unit rows of float32, made a block at a time (no float64 copy of the whole)."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), np.float32)
    for start in range(0, n, BLOCK):
        block = rng.standard_normal((min(BLOCK, n - start), dim), dtype=np.float32)
        out[start : start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out
