"""Pure helpers of the rerank stage: the passage a backend reads, the new order from its
scores, and the scores the reordered items carry.

Scores stay on the 0..1 contract by keeping the fused ranking's scale: the reordered items take
the fused scores of the places they move into (the best reranked item gets the pool's best fused
score, and so on). A reranker's own scores have no scale we know (a user's cross-encoder's
logits, a client model's ranking), so they decide the order only. The pool keeps its score
distribution, so `min_score`, the merge across sources and `seen = downrank` mean what they
meant, and the items past the pool still score below every item in it.
"""

from __future__ import annotations

from collections.abc import Sequence

PASSAGE_CHARS = 1200


def passage(title: str | None, body: str | None, max_chars: int = PASSAGE_CHARS) -> str:
    """The text a reranker reads for a hit: its title and its best chunk, whitespace collapsed,
    cut at a word boundary to `max_chars`."""
    text = ". ".join(
        part for part in (" ".join((title or "").split()), " ".join((body or "").split())) if part
    )
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    space = cut.rfind(" ")
    return cut[:space] if space > max_chars // 2 else cut


def reordered(scores: Sequence[float]) -> list[int]:
    """Positions by descending score; equal scores keep their fused order."""
    return sorted(range(len(scores)), key=lambda n: (-scores[n], n))


def transplanted(fused: Sequence[float]) -> list[float]:
    """The score of each place in the new order: the pool's fused scores, best first (so they
    still fall as the rank grows, whatever moved where)."""
    return sorted(fused, reverse=True)
