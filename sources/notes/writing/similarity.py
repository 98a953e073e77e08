"""Lexical similarity of two texts (pure), for the duplicate check without an embedding model.

Words are lower-cased runs of letters and digits. `top_terms` picks the words that best find
a text's look-alikes (frequent in it, not stop words, longest first on ties); `resemblance` is
the cosine of the texts' content-word and word-pair counts. It tracks the embedding cosine
(`duplicates`) closely enough that a lightly edited note stays above the review line, which word
shingles did not (`docs/performance.md`, "Note writes").
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

WORD = re.compile(r"\w+", re.UNICODE)
_STOP = """a about above after again all also am an and any are as at be because been before being
but by can could did do does doing done for from had has have having he her here hers him his
how i if in into is it its just me more most my no nor not of off on once only or other our
out over own same she should so some such than that the their them then there these they this
those through to too under until up very was we were what when where which while who whom why
will with would you your"""
STOP_WORDS = frozenset(_STOP.split())


def words(text: str) -> list[str]:
    return [w.casefold() for w in WORD.findall(text)]


def top_terms(text: str, count: int = 12) -> list[str]:
    """The `count` words most characteristic of `text`, best first."""
    tally = Counter(w for w in words(text) if len(w) > 2 and w not in STOP_WORDS and not w.isdigit())
    ranked = sorted(tally.items(), key=lambda item: (-item[1], -len(item[0]), item[0]))
    return [word for word, _ in ranked[:count]]


def features(text: str) -> Counter[object]:
    """A text's content words (stop words left out) and its word pairs, with their counts."""
    tokens = words(text)
    found: Counter[object] = Counter(w for w in tokens if w not in STOP_WORDS)
    found.update(itertools.pairwise(tokens))
    return found


def resemblance(a: str, b: str) -> float:
    """The cosine of the two texts' word and word-pair counts, 0..1 (0 when either has no words):
    1.0 for the same words in the same order; an edited word costs itself and its two pairs."""
    left, right = features(a), features(b)
    if not left or not right:
        return 0.0
    dot = sum(count * right[key] for key, count in left.items() if key in right)
    norm = math.sqrt(sum(c * c for c in left.values())) * math.sqrt(sum(c * c for c in right.values()))
    return min(1.0, dot / norm)
