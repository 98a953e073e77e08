"""A phrase of whole words found in its words' posting blocks, in arrays (numpy), not per chunk in SQL.

A block keeps each chunk's positions of a word as text ("4,17"), in chunk order, and a word's
blocks hold disjoint, ascending chunk ranges (`postings/blocks.py`). Read as one string per
column, a word's postings become sorted keys `chunk << 32 | position - TITLE_BASE` (a title
position is below 2^30, a body one above); the phrase starts where word i's keys hold the start
+ i for every i, found by binary search. Counting per chunk in SQL cost a lateral subquery per
chunk that holds every word (about 50 µs each, a second for a phrase of three common words at
100k chunks); here it is a few array passes over the words' positions.

`read_phrase` reads the blocks of a chunk range [since, until): the rarest word's, then the other
words' positions in its chunks alone (only those are parsed; when it is rare, its few chunks also
pick the blocks read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Any

import numpy as np

from .schema import on_postings
from .tokens import TITLE_BASE

BLOCKS_SQL = """SELECT lexeme, array_to_string(chunks, ','), array_to_string(items, ','),
        array_to_string(dls, ','), array_to_string(tf_titles, ','), array_to_string(tf_bodies, ','),
        positions
    FROM {postings} WHERE source = %(source)s AND lexeme = ANY(%(lexemes)s::text[])
        AND last_chunk >= %(since)s AND first_chunk < %(until)s{near}
    ORDER BY lexeme, block"""
"""The blocks of the phrase's words over [since, until), each column one string but the positions
(a string per chunk, so only the chunks that can hold the phrase are parsed)."""
NEAR_SQL = """ AND EXISTS (SELECT 1 FROM unnest(%(near)s::bigint[]) AS c(chunk)
        WHERE c.chunk BETWEEN first_chunk AND last_chunk)"""
"""Only the blocks whose chunk range holds one of the given chunks (`near`: the rarest word's)."""
NEAR_MAX = 2_000
"""Pick the other words' blocks by the rarest word's chunks when it has at most this many."""
EVERY = 2**62
"""An `until` above every chunk."""
BODY = -TITLE_BASE
"""Added to a stored position: a title position becomes its place in the title (below BODY),
a body position BODY + its place."""

Hit = tuple[int, int, int, int, int]
"""(chunk, item, instances in the title, instances in the body, the chunk's length in tokens)."""


@dataclass(frozen=True)
class Postings:
    """One word's postings over a chunk range: per chunk its id, item and length; per position
    its key (`chunk << 32 | position + BODY`), ascending."""

    chunks: np.ndarray
    items: np.ndarray
    dls: np.ndarray
    keys: np.ndarray


def _ints(parts: Sequence[str]) -> np.ndarray:
    text = ",".join(p for p in parts if p)
    if not text:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(np.fromstring(text, dtype=np.int64, sep=","), dtype=np.int64)


Row = tuple[str, str, str, str, str, list[str]]
"""A block as `BLOCKS_SQL` reads it (without the lexeme)."""


def postings(rows: Sequence[Row], keep: np.ndarray | None = None) -> Postings:
    """A word's postings from its blocks' rows (chunks, items, dls, tf_titles, tf_bodies,
    positions), in block order; only in the chunks `keep` (ascending) when given."""
    chunks = _ints([r[0] for r in rows])
    counts = _ints([r[3] for r in rows]) + _ints([r[4] for r in rows])
    texts = [text for r in rows for text in r[5]]
    items, dls = _ints([r[1] for r in rows]), _ints([r[2] for r in rows])
    if keep is not None:
        kept = np.isin(chunks, keep)
        texts = list(compress(texts, kept))
        chunks, counts, items, dls = chunks[kept], counts[kept], items[kept], dls[kept]
    owners = np.repeat(chunks, counts).astype(np.uint64)
    keys = (owners << np.uint64(32)) + (_ints(texts) + BODY).astype(np.uint64)
    return Postings(chunks, items, dls, keys)


def starts(words: Sequence[str], by_word: dict[str, Postings]) -> list[Hit]:
    """The chunks where `words` (stems, in order) occur as a phrase, ascending, each with its
    instances in the title and in the body, as FTS5 counts a phrase in each column. Driven by
    the word with the fewest positions: its positions, moved back to where the phrase would
    start, are looked up in each other word's (so a common word's are only searched)."""
    at, driver = min(enumerate(words), key=lambda w: len(by_word[w[1]].keys))
    first = by_word[driver].keys - np.uint64(at)  # below a chunk's first key: matches nothing
    for shift, word in enumerate(words):
        keys = by_word[word].keys
        if shift == at or not len(first):
            continue
        target = first + np.uint64(shift)
        found = np.minimum(np.searchsorted(keys, target), max(len(keys) - 1, 0))
        first = first[keys[found] == target] if len(keys) else first[:0]
    chunk = (first >> np.uint64(32)).astype(np.int64)
    in_title = (first & np.uint64(0xFFFFFFFF)) < np.uint64(BODY)
    chunks, where = np.unique(chunk, return_inverse=True)
    titles = np.bincount(where, weights=in_title, minlength=len(chunks)).astype(np.int64)
    every = np.bincount(where, minlength=len(chunks)).astype(np.int64)
    own = by_word[driver]
    row = np.searchsorted(own.chunks, chunks)
    items, dls = own.items[row], own.dls[row]
    return [
        (int(c), int(i), int(t), int(n - t), int(d))
        for c, i, t, n, d in zip(chunks, items, titles, every, dls, strict=True)
    ]


async def read(
    conn: Any,
    user_id: str,
    source: str,
    lexemes: Sequence[str],
    since: int = 0,
    until: int = EVERY,
    near: np.ndarray | None = None,
) -> dict[str, Postings]:
    """The postings of `lexemes` over chunks [since, until); with `near` (ascending chunks),
    only in those chunks, read from the blocks that hold one of them."""
    params: dict[str, Any] = {"source": source, "lexemes": list(lexemes), "since": since, "until": until}
    few = near is not None and len(near) <= NEAR_MAX
    sql = BLOCKS_SQL.replace("{near}", NEAR_SQL if few else "")
    if few and near is not None:
        params["near"] = near.tolist()
    rows = await (await conn.execute(on_postings(sql, user_id), params)).fetchall()
    by_word: dict[str, list[Row]] = {lexeme: [] for lexeme in lexemes}
    for lexeme, *columns in rows:
        by_word[lexeme].append(tuple(columns))  # type: ignore[arg-type]
    return {lexeme: postings(blocks, near) for lexeme, blocks in by_word.items()}


async def read_phrase(
    conn: Any, user_id: str, source: str, lexemes: Sequence[str], since: int = 0, until: int = EVERY
) -> dict[str, Postings]:
    """The postings of a phrase's distinct words `lexemes` (rarest first) over [since, until):
    the rarest word's, then the other words' in its chunks alone (read from the blocks that hold
    them when they are few)."""
    rarest = await read(conn, user_id, source, lexemes[:1], since, until)
    near = rarest[lexemes[0]].chunks
    if len(lexemes) == 1:
        return rarest
    if not len(near):
        return rarest | {lexeme: postings([]) for lexeme in lexemes[1:]}
    return rarest | await read(conn, user_id, source, lexemes[1:], since, until, near)


def within(hits: list[Hit], since: int, until: int) -> list[Hit]:
    """The hits in chunks [since, until)."""
    return [h for h in hits if since <= h[0] < until]
