"""The word positions of a small source's copy in memory (`copy.py`), to count phrases there.

Each position is kept as one number, its chunk's position in the copy times 2**32 plus its
place as `postings/positions.decode` gives it (a title's places stay below a body's, and never
run into the next chunk's), sorted within each term. A phrase's instances are then the starts p
of its first word with word i at p + i, found by intersecting sorted arrays: what
`tokens.phrase_starts` counts (FTS5's count of a phrase in each column), for every chunk at once.
A phrase ending in a prefix takes the positions of every lexeme the prefix starts as its last word.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..postings import positions

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
CHUNK_SHIFT = 32


@dataclass(frozen=True)
class Places:
    """Every term's positions (`keys[bounds[n]:bounds[n + 1]]` for term number n), as above."""

    keys: Ints
    bounds: Ints

    def of(self, low: int, high: int) -> Ints:
        """The positions of terms `low` to `high` (excluded), sorted: each term's run is sorted
        already, so a stable sort (numpy's merges such runs) puts them together, where its default
        sort is many times slower on them (`docs/postgresql.md`, session 16)."""
        found = self.keys[self.bounds[low] : self.bounds[high]]
        return found if high - low <= 1 else np.sort(found, kind="stable")

    def counts(
        self, words: list[Ints], chunks: int
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """How often the phrase of these words' positions occurs in each chunk's title and body."""
        starts = starts_of(words)
        at = starts >> CHUNK_SHIFT
        in_title = ((starts & ((1 << CHUNK_SHIFT) - 1)) < positions.BODY).astype(np.float64)
        titles = np.bincount(at, weights=in_title, minlength=chunks).astype(np.float64, copy=False)
        every = np.bincount(at, minlength=chunks).astype(np.float64, copy=False)
        return titles, every - titles

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.bounds.nbytes)


def read_places(
    blocks: list[bytes], titles: Ints, bodies: Ints, chunk_at: Ints, term_sizes: list[int]
) -> Places:
    """The places of the postings of `blocks` (their `places` bytes, the postings' order: with
    `titles[i]` and `bodies[i]` places for posting i), in the chunks at `chunk_at`, of terms with
    `term_sizes` postings each (in order)."""
    if not blocks:
        return Places(np.zeros(0, dtype=np.int64), np.zeros(len(term_sizes) + 1, dtype=np.int64))
    per_posting = titles.astype(np.int64) + bodies
    keys = (np.repeat(chunk_at, per_posting) << CHUNK_SHIFT) + positions.decode(blocks, titles, bodies)
    term_of_posting = np.repeat(np.arange(len(term_sizes), dtype=np.int64), term_sizes)
    term_of_key = np.repeat(term_of_posting, per_posting)
    order = np.lexsort((keys, term_of_key))
    per_term = np.bincount(term_of_key, minlength=len(term_sizes))
    return Places(keys[order], np.concatenate([[0], np.cumsum(per_term)]).astype(np.int64))


def starts_of(words: list[Ints]) -> Ints:
    """The positions p with word i at p + i for every i, sorted: the rarest word's positions
    (less its offset) are the candidates, each later word keeps those it has at its offset,
    looked up by binary search (`np.searchsorted`, m log n for m candidates in n positions: no
    sort of both arrays together, as `np.intersect1d`'s, whose cost the most common word set)."""
    order = sorted(range(len(words)), key=lambda i: len(words[i]))
    starts = words[order[0]] - order[0]
    for i in order[1:]:
        if not len(starts):
            break
        wanted = starts + i
        starts = starts[words[i].take(np.searchsorted(words[i], wanted), mode="clip") == wanted]
    return starts
