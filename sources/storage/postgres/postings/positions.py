"""A posting block's word positions as bytes (`places`, migration 6), read without parsing text.

A block's `places` are its postings' places end to end, each posting's places of the word in
its chunk's title, then in its body (each column counted from 0; `tf_titles` and `tf_bodies`
tell how many of each), as big-endian 16-bit numbers (PostgreSQL's own byte order, as
`int4send` writes them: migration 6 converts in SQL): two bytes a place, read with
`numpy.frombuffer` on any CPU. A block holding a place of 2**16 or more (a chunk of over 65,535 tokens) is
wide: the byte WIDE, then 32-bit numbers, so its length is odd; new postings are never appended
to a wide block (`blocks.placed`), so a block's bytes are always one width. As stored by
`tokens.py`, a title place is `TITLE_BASE` + its place (`stored`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..tokens import TITLE_BASE

Ints = npt.NDArray[np.int64]
NARROW = np.dtype(">u2")
WIDE_DTYPE = np.dtype(">u4")
WIDE = b"\x04"
"""The first byte of a wide block's places."""
LIMIT = 1 << 16
"""The first place a narrow block cannot hold."""
BODY = -TITLE_BASE
"""Added to a body place by `decode`: a chunk's title places stay below its body places."""


def places_of(stored: Ints) -> Ints:
    """Each stored position's place in its column."""
    return np.where(stored < 0, stored - TITLE_BASE, stored)


def encode(places: Ints) -> bytes:
    """A block's `places` bytes for these places (its postings', in order)."""
    if len(places) and int(places.max()) >= LIMIT:
        return WIDE + places.astype(WIDE_DTYPE).tobytes()
    return places.astype(NARROW).tobytes()


def is_wide(data: bytes) -> bool:
    return len(data) % 2 == 1


def numbers(blocks: Sequence[bytes]) -> Ints | npt.NDArray[np.uint16]:
    """Every place in blocks' bytes, end to end (narrow blocks read as one buffer): what
    `decode_numbers` reads."""
    if not any(map(is_wide, blocks)):
        return np.frombuffer(b"".join(blocks), dtype=NARROW)
    return np.concatenate(
        [
            np.frombuffer(b, dtype=WIDE_DTYPE, offset=1) if is_wide(b) else np.frombuffer(b, dtype=NARROW)
            for b in blocks
        ]
    ).astype(np.int64)


def _columns(titles: Ints, bodies: Ints) -> Ints:
    """What `decode` adds to each of postings' places (`titles[i]` in the title, then
    `bodies[i]` in the body, for posting i): 0 to a title place, BODY to a body place."""
    lengths = np.column_stack((titles, bodies)).ravel()
    return np.repeat(np.tile(np.asarray([0, BODY], dtype=np.int64), len(titles)), lengths)


def decode(
    blocks: Sequence[bytes], titles: Ints, bodies: Ints, kept: npt.NDArray[np.bool_] | None = None
) -> Ints:
    """The stored positions less `TITLE_BASE` (a title place as it is, a body place plus
    BODY) of the postings of `blocks` (their bytes, in order; `titles` and `bodies`: every
    posting's counts, in the same order), in posting order; only the `kept` postings' when given
    (the others' places are never converted)."""
    return decode_numbers(numbers(blocks), titles, bodies, kept)


def decode_numbers(
    places: Ints | npt.NDArray[np.uint16],
    titles: Ints,
    bodies: Ints,
    kept: npt.NDArray[np.bool_] | None = None,
) -> Ints:
    """`decode` of places already read as numbers (`numbers`)."""
    counts = titles + bodies
    if len(places) != int(counts.sum()):
        raise ValueError("posting blocks' places do not match their counts")
    if kept is not None:
        starts = (np.cumsum(counts) - counts)[kept]
        titles, bodies, counts = titles[kept], bodies[kept], counts[kept]
        first = np.cumsum(counts) - counts
        places = places[np.repeat(starts - first, counts) + np.arange(int(counts.sum()))]
    columns = _columns(titles, bodies)
    columns += places
    return columns


def cut(data: bytes, counts: Ints, keep: npt.NDArray[np.bool_]) -> bytes:
    """A block's bytes with only the `keep` postings' places (`counts[i]` places for posting i),
    in the block's width."""
    wide = is_wide(data)
    width = WIDE_DTYPE if wide else NARROW
    places = np.frombuffer(data, dtype=width, offset=1 if wide else 0)
    mine = np.repeat(keep, counts)
    return (WIDE if wide and bool(keep.any()) else b"") + places[mine].tobytes()
