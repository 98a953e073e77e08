"""The word positions of a small source's copy in memory (`copy.py`), to count phrases there.

Each position is kept as one number: the places of the copy's columns numbered end to end (chunk
position c's title is column 2c, its body column 2c + 1; `columns[k]` is the number of column k's
place 0, places as `postings/positions.decode` gives them), sorted within each term. A phrase's
instances are then the starts p of its first word with word i at p + i and its last word in p's
column, found by intersecting the words' numbers: what `tokens.phrase_starts` counts (FTS5's
count of a phrase in each column), for every chunk at once. A phrase ending in a prefix takes the
positions of every lexeme the prefix starts as its last word.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..postings import positions

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
TABLE_SHARE = 256
"""A word's positions are looked up in a table of every place (one byte each) when the candidates
are more than the places / TABLE_SHARE, else by binary search (`starts_of`)."""


@dataclass(frozen=True)
class Places:
    """Every term's positions (`keys[bounds[n]:bounds[n + 1]]` for term number n) and where each
    column's places start (`columns`, one more than the columns: the end), as above."""

    keys: Ints
    bounds: Ints
    columns: Ints

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
        starts = starts_of(words, int(self.columns[-1]))
        column = np.searchsorted(self.columns, starts, side="right") - 1
        last = np.searchsorted(self.columns, starts + (len(words) - 1), side="right") - 1
        column = column[column == last]  # not running on into the next column
        at = column >> 1
        in_title = (column & 1 == 0).astype(np.float64)
        titles = np.bincount(at, weights=in_title, minlength=chunks).astype(np.float64, copy=False)
        every = np.bincount(at, minlength=chunks).astype(np.float64, copy=False)
        return titles, every - titles

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.bounds.nbytes + self.columns.nbytes)


def read_places(
    blocks: list[bytes], titles: Ints, bodies: Ints, chunk_at: Ints, term_sizes: list[int], chunks: int
) -> Places:
    """The places of the postings of `blocks` (their `places` bytes, the postings' order: with
    `titles[i]` and `bodies[i]` places for posting i), in the chunks at `chunk_at` (of `chunks`),
    of terms with `term_sizes` postings each (in order)."""
    bounds = np.zeros(len(term_sizes) + 1, dtype=np.int64)
    if not blocks:
        return Places(np.zeros(0, dtype=np.int64), bounds, np.zeros(2 * chunks + 1, dtype=np.int64))
    per_posting = titles.astype(np.int64) + bodies
    decoded = positions.decode(blocks, titles, bodies)
    in_body = decoded >= positions.BODY
    places = np.where(in_body, decoded - positions.BODY, decoded)
    column = 2 * np.repeat(chunk_at, per_posting) + in_body
    length = np.zeros(2 * chunks, dtype=np.int64)
    np.maximum.at(length, column, places + 1)
    columns = np.concatenate([[0], np.cumsum(length)]).astype(np.int64)
    keys = columns[column] + places
    term_of_posting = np.repeat(np.arange(len(term_sizes), dtype=np.int64), term_sizes)
    term_of_key = np.repeat(term_of_posting, per_posting)
    order = np.lexsort((keys, term_of_key))
    bounds[1:] = np.cumsum(np.bincount(term_of_key, minlength=len(term_sizes)))
    return Places(keys[order], bounds, columns)


def starts_of(words: list[Ints], size: int) -> Ints:
    """The positions p with word i at p + i for every i (positions below `size`), sorted: the
    rarest word's positions (less its offset) are the candidates, each later word keeps those it
    has at its offset, looked up in a table of every position when the candidates are many, else
    by binary search (`np.searchsorted`, m log n for m candidates in n positions). Neither sorts
    the two arrays together, as `np.intersect1d` did, whose cost the most common word set."""
    order = sorted(range(len(words)), key=lambda i: len(words[i]))
    starts = words[order[0]] - order[0]
    pad = len(words)  # a candidate's wanted position is within `pad` of 0 and `size`
    for i in order[1:]:
        if not len(starts):
            break
        wanted = starts + i
        if len(starts) * TABLE_SHARE > size:
            table = np.zeros(size + 2 * pad, dtype=np.bool_)
            table[words[i] + pad] = True
            starts = starts[table[wanted + pad]]
        else:
            starts = starts[words[i].take(np.searchsorted(words[i], wanted), mode="clip") == wanted]
    return starts
