"""What a sentence-embedding model is to search (`Embedder`), and why one may be missing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ...storage.vector_store import Vectors


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
