"""The sampling reranker's prompt and the reading of its answer (pure).

The prompt is compact: the query, then each passage numbered and cut to `PASSAGE_CHARS`, and
one instruction: answer with the numbers of the passages, most relevant first, separated by
commas, nothing else. The answer is read leniently — any numbers in it, in order (`3, 1, 2`,
`[3] > [1] > [2]`, `Ranking: 3 1 2`), those out of range or repeated ignored — and the passages
it left out follow the ones it named, in their fused order. An answer naming no passage is not
understood (the stage then keeps the fused order).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .backend import RerankError
from .order import passage

PASSAGE_CHARS = 300
SYSTEM = (
    "You rank search results by how well they answer a query. Reply with the passage numbers "
    "only, most relevant first, separated by commas (for example: 3, 1, 2). No other text."
)
_NUMBER = re.compile(r"\d+")


def ranking_prompt(query: str, passages: Sequence[str]) -> str:
    """The user message: the query and the numbered passages."""
    lines = [f"Query: {' '.join(query.split())}", "", "Passages:"]
    lines += [f"[{n}] {passage(None, text, PASSAGE_CHARS)}" for n, text in enumerate(passages, start=1)]
    lines += ["", f"Rank all {len(passages)} passages, most relevant first."]
    return "\n".join(lines)


def ranking_of(answer: str, count: int) -> list[int]:
    """The 0-based positions the answer ranks, most relevant first, then the rest in order."""
    named: list[int] = []
    for match in _NUMBER.finditer(answer):
        n = int(match.group()) - 1
        if 0 <= n < count and n not in named:
            named.append(n)
    if not named:
        raise RerankError("the client's model named no passage")
    return named + [n for n in range(count) if n not in named]


def scores_of(ranking: Sequence[int]) -> list[float]:
    """Scores (per position) that give `ranking`: the first ranked scores highest."""
    scores = [0.0] * len(ranking)
    for place, n in enumerate(ranking):
        scores[n] = float(len(ranking) - place)
    return scores
