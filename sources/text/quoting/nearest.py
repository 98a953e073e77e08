"""The passage of a text most like a quote that is not in it, and how alike they are (pure).

Bounded in time by construction, whatever the text or the quote:

1. *Place* it: the quote's longest words (`PLACING_WORDS`; the rarer weigh more) are found with
   `str.find`, at most `COMMON_HITS` places each, and the window as wide as the quote holding
   the most of them wins: a few C-speed passes and a sort of at most 8 × 5,000 places.
2. *Align* it: around that window, the quote's tokens that occur at most `RARE` times there
   anchor it; the most common diagonal (region token − quote token) says where the quote lies,
   and the anchors near that diagonal say where its first and last tokens fall (so a changed
   first or last word is still inside). Linear in the quote and the region.
3. *Compare*: the longest common subsequence of tokens, weighted by their length, inside a band
   of `BAND` tokens around the diagonal (`similarity`): quote tokens × (2 × `BAND` + 1) steps.

Each step is a generator that yields between pieces of work, like `folding.Normalised.steps`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Generator
from math import log

WORD = re.compile(r"\w+")
TOKEN = re.compile(r"\w+|[^\w\s]")
COMMON_HITS = 5000
"""Words found more often than this are too common to place the passage (and are looked for
at most this many times when nothing rarer is there)."""
PLACING_WORDS = 8
RARE = 4
"""A quote token found at most this many times around the window anchors the alignment."""
BAND = 16
"""How far (in tokens) the compared passage may drift from the quote's diagonal."""
ROWS_PER_STEP = 32


def positions(text: str, word: str, most: int) -> Generator[None, None, list[int]]:
    found: list[int] = []
    at = text.find(word)
    while at >= 0 and len(found) < most:
        found.append(at)
        at = text.find(word, at + 1)
        if len(found) % 1000 == 0:
            yield
    return found


def best_window(text: str, words: list[str], width: int) -> Generator[None, None, int | None]:
    """The offset where a window of `width` characters of `text` (normalised) holds the most of
    `words`, or None when none of them occurs."""
    placing = sorted(set(words), key=len, reverse=True)[:PLACING_WORDS]
    counts = {}
    for word in placing:
        counts[word] = text.count(word)
        yield
    usable = [w for w in placing if 0 < counts[w] <= COMMON_HITS]
    if not usable:
        present = [w for w in placing if counts[w]]
        if not present:
            return None
        usable = [min(present, key=lambda w: counts[w])]
    hits: list[tuple[int, float]] = []
    for word in usable:
        weight = 1.0 / log(2 + counts[word])
        hits += [(pos, weight) for pos in (yield from positions(text, word, COMMON_HITS))]
    hits.sort()
    yield
    best, best_at, total, first = -1.0, hits[0][0], 0.0, 0
    for n, (pos, weight) in enumerate(hits, 1):
        if n % 4096 == 0:
            yield
        total += weight
        while hits[first][0] < pos - width:
            total -= hits[first][1]
            first += 1
        if total > best:
            best, best_at = total, hits[first][0]
    return best_at


def aligned(quote: list[str], region: list[str]) -> tuple[int, int] | None:
    """The first and last region token the quote's tokens fall on, or None without an anchor."""
    where: dict[str, list[int]] = {}
    for j, token in enumerate(region):
        where.setdefault(token, []).append(j)
    anchors = [
        (i, j) for i, token in enumerate(quote) if 0 < len(where.get(token, ())) <= RARE for j in where[token]
    ]
    if not anchors:
        return None
    diagonal = Counter(j - i for i, j in anchors).most_common(1)[0][0]
    near = [(i, j) for i, j in anchors if abs(j - i - diagonal) <= BAND]
    (i_first, j_first), (i_last, j_last) = min(near), max(near)
    first = max(0, j_first - i_first)
    last = min(len(region) - 1, j_last + len(quote) - 1 - i_last)
    return first, max(first, last)


def similarity(quote: list[str], passage: list[str]) -> Generator[None, None, float]:
    """2 × the characters of the tokens they share in order / the characters of both (0..1),
    the shared tokens looked for within `BAND` tokens of the diagonal."""
    total = sum(map(len, quote)) + sum(map(len, passage))
    if not quote or not passage:
        return 0.0
    slope = len(passage) / len(quote)
    # A row holds columns [start, high] (start = its band's low - 1). Past a row's end its last
    # value holds (a common subsequence never shrinks as the passage grows); the band only
    # moves right, so a row reads the one before from its own start on.
    before, start = [0], 0
    for i, token in enumerate(quote, 1):
        centre = round(i * slope)
        low, high = max(1, centre - BAND), min(len(passage), centre + BAND)
        short = high - (start + len(before) - 1)
        if short > 0:
            before += [before[-1]] * short
        left = before[low - 1 - start]
        row = [left]
        for j in range(low, high + 1):
            up = before[j - start]
            if up > left:
                left = up
            if passage[j - 1] == token:
                diagonal = before[j - 1 - start] + len(token)
                if diagonal > left:
                    left = diagonal
            row.append(left)
        before, start = row, low - 1
        if i % ROWS_PER_STEP == 0:
            yield
    return 2 * before[-1] / total


def closest(text: str, quote: str) -> Generator[None, None, tuple[int, int, float] | None]:
    """[start, end) in `text` of the passage most like `quote` (both normalised: see
    `folding.Normalised`) and their similarity; None when no word of the quote occurs."""
    words = WORD.findall(quote)
    at = (yield from best_window(text, words, len(quote))) if words else None
    if at is None:
        return None
    region_start = max(0, at - len(quote))
    region = list(TOKEN.finditer(text, region_start, min(len(text), at + 2 * len(quote))))
    tokens = TOKEN.findall(quote)
    if not region:
        return None
    yield
    span = aligned(tokens, [m.group() for m in region])
    if span is None:  # every token common around it: the quote's length from the window
        begin = next((n for n, m in enumerate(region) if m.start() >= at), 0)
        span = begin, min(len(region) - 1, begin + len(tokens) - 1)
    yield
    passage = [m.group() for m in region[span[0] : span[1] + 1]]
    ratio = yield from similarity(tokens, passage)
    return region[span[0]].start(), region[span[1]].end(), round(ratio, 3)
