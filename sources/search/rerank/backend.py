"""What a reranking model is to the rerank stage (`RerankBackend`), and what a search request
carries when the caller asked for reranking (`Reranking`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class RerankBackend(Protocol):
    """Scores (query, passage) pairs: higher is more relevant. The scale is the backend's own:
    the stage uses only the order they give."""

    name: str
    """What reranked, for hints: `cross-encoder model.onnx`, `client sampling`."""
    pool: int
    """How many of the fused ranking's best items it reorders."""

    async def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in order; raises when it cannot."""
        ...


class RerankError(RuntimeError):
    """A reranker could not score (a model that does not load or run, output not understood)."""


@dataclass(frozen=True)
class Reranking:
    """A caller's `rerank: true`: the backend chosen for this call, or why there is none, and
    the time budget the stage gives it."""

    backend: RerankBackend | None
    why_not: str | None = None
    timeout_s: float = 4.0
