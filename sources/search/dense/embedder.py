"""What a sentence-embedding model is to search (`Embedder`), and the one installed, if any.

The default backend is all-MiniLM-L6-v2 (int8 ONNX, `minilm.py`), brought by the `semantic`
extra. Without it `embedder()` returns None and `unavailable()` says why, so every search
stays lexical and says so; nothing imports onnxruntime or tokenizers before then.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]
"""Unit-length float32 rows, one per text window."""


class Embedder(Protocol):
    """Texts to unit vectors. A long text is cut into overlapping windows the model can read
    whole (each its own vector); a query is one window."""

    model_id: str
    dim: int

    def embed_windows(self, texts: Sequence[str]) -> list[Vectors]:
        """Each text's window vectors (at least one row per text, in order)."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """The query's vector (shape `(dim,)`)."""
        ...


class ModelUnavailableError(RuntimeError):
    """The embedding model cannot be loaded (not installed, or its file does not verify)."""


@functools.cache
def _load() -> Embedder | str:
    try:
        from .minilm import MiniLMEmbedder

        return MiniLMEmbedder.load()
    except (ImportError, ModelUnavailableError, OSError) as exc:
        return f"semantic search is off: {exc}; install knowledge-mcp[semantic]"


def embedder() -> Embedder | None:
    """The installed embedding model, loaded once per process; None without one."""
    loaded = _load()
    return None if isinstance(loaded, str) else loaded


def unavailable() -> str | None:
    """Why there is no embedding model (a hint for responses), or None when there is one."""
    loaded = _load()
    return loaded if isinstance(loaded, str) else None


def reset() -> None:
    """Forget the loaded model (tests that take it away and give it back)."""
    _load.cache_clear()
