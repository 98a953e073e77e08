"""A common word's postings as kept in memory (`common_words.CommonWords`): a `Word`, each
array in the narrowest type that holds it, and its windows cut as `phrase_match.read` gives them.

Read whole from its blocks in binary (`sent`: each array as `array_send` writes it), a word keeps
about 12 bytes a posting and 2 a place, where int64 arrays and stored key bases took 64 and 2, so
that a source's common words fit the kept words' budget (`docs/postgresql.md`, "Session 16").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import positions
from .phrase_match import BODY, Postings

NEAR_SHARE = 4
"""A word's postings are cut to a rarer word's chunks when those are under a quarter of them."""
SENT_HEAD = 20
"""The bytes before a one-dimensional array's elements in its binary form (`array_send`):
dimensions, whether it has nulls, the element type, then the dimension's size and lower bound."""
BIGINT, INTEGER = np.dtype([("size", ">i4"), ("value", ">i8")]), np.dtype([("size", ">i4"), ("value", ">i4")])
"""An element of a bigint or integer array as sent: its size in bytes, then its value."""


def sent(parts: list[bytes], element: np.dtype[Any]) -> np.ndarray:
    """The elements of arrays in binary form (`array_send`; without nulls), end to end, as int64."""
    body = b"".join(memoryview(p)[SENT_HEAD:] for p in parts if len(p) > SENT_HEAD)
    values = np.frombuffer(body, dtype=element)
    if len(body) % element.itemsize or (values["size"] != element["value"].itemsize).any():
        raise ValueError("a posting array was not read as expected")
    return values["value"].astype(np.int64)


CHUNK_MOST = np.iinfo(np.int32).max
"""A word whose chunks are all below it keeps them as int32 (`Word.chunks`)."""


def _narrow(values: np.ndarray, *dtypes: type[np.integer[Any]]) -> np.ndarray:
    """`values` (int64, none negative) in the first of `dtypes` that holds them all, else as
    they are."""
    top = int(values.max()) if len(values) else 0
    for dtype in dtypes:
        if top <= np.iinfo(dtype).max:
            return values.astype(dtype)
    return values


ANCHOR = 64
"""`Ascending` keeps every ANCHOR-th number whole."""


class Ascending:
    """Ascending (non-decreasing, none negative) numbers as every `ANCHOR`-th one (int64) and
    each one's distance from it (uint16) when every distance fits, else as they are (int32 when
    they fit): two bytes a number, read back with one addition."""

    def __init__(self, values: np.ndarray) -> None:
        anchors = values[::ANCHOR].copy()
        apart = values - np.repeat(anchors, ANCHOR)[: len(values)]
        narrow = len(values) == 0 or int(apart.max()) <= np.iinfo(np.uint16).max
        self.anchors = anchors if narrow else anchors[:0]
        self.apart = apart.astype(np.uint16) if narrow else _narrow(values, np.int32)
        self.narrow = narrow

    def __len__(self) -> int:
        return len(self.apart)

    def __getitem__(self, at: slice | np.ndarray) -> np.ndarray:
        """The numbers at `at` (a slice of step 1, or positions), as int64."""
        if not self.narrow:
            return self.apart[at].astype(np.int64)
        where = np.arange(at.start, at.stop) if isinstance(at, slice) else at
        found: np.ndarray = self.anchors[where // ANCHOR] + self.apart[at]
        return found

    def one(self, at: int) -> int:
        """The number at `at`."""
        base = int(self.anchors[at // ANCHOR]) if self.narrow else 0
        return base + int(self.apart[at])

    @property
    def nbytes(self) -> int:
        return int(self.anchors.nbytes + self.apart.nbytes)


@dataclass(frozen=True)
class Word:
    """A word's postings in a source, each array in the narrowest type that holds it: per posting
    its chunk (ascending; int32 when all are below `CHUNK_MOST`), item (`Ascending`) and length,
    and where its places start in `numbers` (`Ascending`, one more at the end); per posting and
    column (the title, then the body), how many places it has there (`lengths`); the places
    (`numbers`: uint16 when narrow). A place's key (`chunk << 32`, plus BODY in the body, plus
    the place) is made when a window is cut, not kept."""

    chunks: np.ndarray
    items: Ascending
    dls: np.ndarray
    starts: Ascending
    lengths: np.ndarray
    numbers: np.ndarray

    @staticmethod
    def of(rows: list[tuple[Any, ...]]) -> Word:
        """From `WORD_SQL`'s rows (without the generation)."""
        chunks = sent([r[0] for r in rows], BIGINT)
        titles, bodies = sent([r[3] for r in rows], INTEGER), sent([r[4] for r in rows], INTEGER)
        starts = np.zeros(len(chunks) + 1, dtype=np.int64)
        np.cumsum(titles + bodies, out=starts[1:])
        numbers = positions.numbers([bytes(r[5]) for r in rows])
        if len(numbers) != int(starts[-1]):
            raise ValueError("posting blocks' places do not match their counts")
        lengths = np.column_stack((titles, bodies)).ravel()
        items, dls = sent([r[1] for r in rows], BIGINT), sent([r[2] for r in rows], INTEGER)
        return Word(
            chunks.astype(np.int32) if len(chunks) == 0 or int(chunks[-1]) < CHUNK_MOST else chunks,
            Ascending(items),
            _narrow(dls, np.uint16, np.int32),
            Ascending(starts),
            _narrow(lengths, np.uint8, np.uint16, np.int32),
            _narrow(numbers, np.uint16, np.uint32),
        )

    @property
    def size(self) -> int:
        """Its arrays' bytes."""
        arrays = (self.chunks, self.items, self.dls, self.starts, self.lengths, self.numbers)
        return sum(a.nbytes for a in arrays)

    def _chunks(self, chunks: Any) -> np.ndarray:
        """`chunks` (ascending, none negative) as comparable with `self.chunks` without
        converting those: as int32 when they are, any chunk above theirs as `CHUNK_MOST`."""
        if self.chunks.dtype == np.int64:
            return np.asarray(chunks, dtype=np.int64)
        return np.minimum(np.asarray(chunks, dtype=np.int64), CHUNK_MOST).astype(np.int32)

    def older(self, until: int) -> int:
        """How many of its chunks are older (lower) than `until`."""
        return int(np.searchsorted(self.chunks, self._chunks([until])[0]))

    def postings(self, since: int, until: int, rows: bool = True, near: np.ndarray | None = None) -> Postings:
        """Its postings in chunks [since, until) as `phrase_match.read` gives them (without `rows`,
        no items and lengths). With `near` (a rarer word's chunks there, ascending), only in those
        when they are a small share (`_among`); else not cut to them: a key of a chunk without
        the rarer word starts no phrase and is the place of none (`phrase_match.starts`)."""
        low, high = (int(n) for n in np.searchsorted(self.chunks, self._chunks([since, until])))
        if near is not None and len(near) * NEAR_SHARE < high - low:
            return self._among(near, rows)
        numbers = self.numbers[self.starts.one(low) : self.starts.one(high)]
        return self._keyed(slice(low, high), self.lengths[2 * low : 2 * high], numbers, rows)

    def _among(self, near: np.ndarray, rows: bool) -> Postings:
        """Its postings in the chunks `near` (ascending) alone: only their places converted."""
        wanted = self._chunks(near)
        at = np.minimum(np.searchsorted(self.chunks, wanted), max(len(self.chunks) - 1, 0))
        mine = at[self.chunks[at] == wanted] if len(self.chunks) else at[:0]
        first = self.starts[mine]
        counts = self.starts[mine + 1] - first
        moved = first - (np.cumsum(counts) - counts)
        numbers = self.numbers[np.repeat(moved, counts) + np.arange(int(counts.sum()))]
        pairs = np.empty(2 * len(mine), dtype=np.int64)
        pairs[0::2], pairs[1::2] = 2 * mine, 2 * mine + 1
        return self._keyed(mine, self.lengths[pairs], numbers, rows)

    def _keyed(
        self, at: slice | np.ndarray, lengths: np.ndarray, numbers: np.ndarray, rows: bool
    ) -> Postings:
        """The postings at `at` (a slice, or positions ascending), with their `lengths` and
        places (`numbers`): each place's key is its chunk's base in its column plus the place."""
        chunks = self.chunks[at].astype(np.int64)
        owners = chunks.astype(np.uint64) << np.uint64(32)
        bases = np.empty(2 * len(chunks), dtype=np.uint64)
        bases[0::2], bases[1::2] = owners, owners + np.uint64(BODY)
        keys = np.repeat(bases, lengths)
        keys += numbers
        if not rows:
            return Postings(chunks, chunks[:0], chunks[:0], keys)
        return Postings(chunks, self.items[at], self.dls[at].astype(np.int64), keys)
