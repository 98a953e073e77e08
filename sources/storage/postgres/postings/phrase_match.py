"""A phrase found in its words' posting blocks, in arrays (numpy), not per chunk in SQL.

A block keeps its chunks' places of a word as bytes (`postings/positions.py`), in chunk order,
and a word's blocks hold disjoint, ascending chunk ranges (`postings/blocks.py`). Read as one
string per column and the places as they are, a word's postings become sorted keys
`chunk << 32 | place` (a title place below BODY, a body one BODY + its place); the phrase starts
where word i's keys hold the start + i for every i, found by binary search. Counting per chunk
in SQL cost a lateral subquery per chunk that holds every word (about 50 µs each, a second for a
phrase of three common words at 100k chunks); here it is a few array passes over the words'
places, and only the places of the chunks that can hold the phrase are converted.

`read_phrase` reads the blocks of a chunk range [since, until): the rarest word's, then the other
words' places in its chunks alone (when it is rare, its few chunks also pick the blocks read). A
phrase ending in a prefix takes the places of every lexeme the prefix starts as its last word.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import psycopg

from ..pool import read_on
from ..schema import on_postings
from . import positions

BLOCKS_SQL = """SELECT lexeme, array_to_string(chunks, ','), {rows}, array_to_string(tf_titles, ','),
        array_to_string(tf_bodies, ','), places
    FROM {postings} WHERE source = %(source)s AND {words}
        AND last_chunk >= %(since)s AND first_chunk < %(until)s{near}
    ORDER BY lexeme, block"""
"""The blocks of the phrase's words over [since, until), each column one string but the places
(read as bytes: the statement is run in binary). Items and lengths (`ROWS`) only of the word whose
chunks a hit's row is taken from (the rarest): turning a common word's arrays into text costs the
server about as much as reading its places."""
ROWS = "array_to_string(items, ','), array_to_string(dls, ',')"
NO_ROWS = "'', ''"
WORDS = "lexeme = ANY(%(lexemes)s::text[])"
PREFIX = "lexeme >= %(low)s AND lexeme < %(high)s"
"""The lexemes a prefix starts: [prefix, prefix + TOP)."""
NEAR_SQL = """ AND width_bucket(last_chunk, %(near)s::bigint[])
        > width_bucket(first_chunk - 1, %(near)s::bigint[])"""
"""Only the blocks whose chunk range holds one of the given chunks (`near`: the rarest word's,
ascending): more of them up to its last chunk than before its first (`width_bucket` counts them by
binary search)."""
WINDOW_SQL = """WITH w AS (
        SELECT lexeme, block, chunks, items, dls, tf_titles, tf_bodies, places, first_chunk, n, blocks
        FROM (SELECT lexeme, block, chunks, items, dls, tf_titles, tf_bodies, places, first_chunk, n,
                sum(n) OVER (ORDER BY last_chunk DESC) - n AS newer, count(*) OVER () AS blocks
            FROM {postings} WHERE source = %(source)s AND lexeme = %(lexeme)s AND last_chunk < %(until)s) AS s
        WHERE newer < %(window)s),
    near AS (SELECT coalesce(array_agg(c ORDER BY c), '{}') AS chunks
        FROM w CROSS JOIN LATERAL unnest(w.chunks) AS c)
    SELECT 0 AS part, lexeme, array_to_string(chunks, ','), {rows}, array_to_string(tf_titles, ','),
        array_to_string(tf_bodies, ','), places, first_chunk, n, blocks, block
    FROM w
    UNION ALL
    SELECT 1, b.lexeme, array_to_string(b.chunks, ','), '', '', array_to_string(b.tf_titles, ','),
        array_to_string(b.tf_bodies, ','), b.places, NULL, NULL, NULL, b.block
    FROM {postings} AS b CROSS JOIN near
    WHERE b.source = %(source)s AND b.lexeme = ANY(%(rest)s::text[]) AND b.first_chunk < %(until)s
        AND width_bucket(b.last_chunk, near.chunks) > width_bucket(b.first_chunk - 1, near.chunks)
    ORDER BY 1, 2, 12"""
"""A word's newest blocks older than `until` that hold its newest `window` chunks (a word's blocks
hold disjoint chunk ranges), with their first chunks and sizes and how many blocks it has there
(part 0); and the other words' (`rest`) blocks that hold one of those chunks (part 1): one round
trip a window."""
NEAR_MAX = 20_000
"""Pick the other words' blocks by the rarest word's chunks when it has at most this many."""
EVERY = 2**62
"""An `until` above every chunk."""
PREFIXED = ""
"""The word a phrase's last prefix is read as (no lexeme is empty)."""
BODY = positions.BODY
"""A title place is below it, a body place is BODY + its place (`positions.decode`)."""

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


async def rows_as(conn: Any, user_id: str, sql: str, params: dict[str, Any]) -> list[Any]:
    """`sql`'s rows read as `user_id`. On a connection in a transaction (the caller's, its user
    set) in binary; on an idle one sent after the user in one simple query (`pool.read_on`: one
    round trip, one implicit transaction), where BEGIN, the user, the statement and COMMIT took
    four (`docs/postgresql.md`, "Session 15: which queries make notes'…"). Text there (bytea
    arrives in hex, the same bytes once loaded)."""
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        return list(await (await conn.execute(sql, params, binary=True)).fetchall())
    return (await read_on(conn, user_id, sql, params))[1]


Row = tuple[str, str, str, str, str, bytes]
"""A block as `BLOCKS_SQL` reads it (without the lexeme)."""


def postings(rows: Sequence[Row], keep: np.ndarray | None = None) -> Postings:
    """A word's postings from its blocks' rows (chunks, items, dls, tf_titles, tf_bodies,
    places), in block order; only in the chunks `keep` (ascending) when given."""
    chunks = _ints([r[0] for r in rows])
    titles, bodies = _ints([r[3] for r in rows]), _ints([r[4] for r in rows])
    items, dls = _ints([r[1] for r in rows]), _ints([r[2] for r in rows])  # empty: not read
    return keyed(chunks, items, dls, titles, bodies, positions.numbers([bytes(r[5]) for r in rows]), keep)


def keyed(
    chunks: np.ndarray,
    items: np.ndarray,
    dls: np.ndarray,
    titles: np.ndarray,
    bodies: np.ndarray,
    numbers: np.ndarray,
    keep: np.ndarray | None = None,
) -> Postings:
    """A word's postings from its arrays (`numbers`: its places end to end, as
    `positions.numbers` reads them; `items` and `dls` may be empty: not read); only in the
    chunks `keep` (ascending) when given."""
    kept = None if keep is None else np.isin(chunks, keep)
    places = positions.decode_numbers(numbers, titles, bodies, kept)
    if kept is not None:
        chunks, titles, bodies = chunks[kept], titles[kept], bodies[kept]
        items, dls = (items[kept], dls[kept]) if len(items) else (items, dls)
    owners = np.repeat(chunks, titles + bodies).astype(np.uint64)
    keys = (owners << np.uint64(32)) + places.astype(np.uint64)
    return Postings(chunks, items, dls, keys)


def merged(parts: Sequence[Postings]) -> Postings:
    """Several lexemes' postings as one word's (a prefix's): a chunk once, every key."""
    if not parts:
        return postings([])
    chunks = np.concatenate([p.chunks for p in parts])
    unique, first = np.unique(chunks, return_index=True)
    items, dls = np.concatenate([p.items for p in parts]), np.concatenate([p.dls for p in parts])
    if len(items) == len(chunks):
        items, dls = items[first], dls[first]
    return Postings(unique, items, dls, np.sort(np.concatenate([p.keys for p in parts])))


def starts(words: Sequence[str], by_word: dict[str, Postings], rows_of: str | None = None) -> list[Hit]:
    """The chunks where `words` (stems, in order) occur as a phrase, ascending, each with its
    instances in the title and in the body, as FTS5 counts a phrase in each column, and its item
    and length from `rows_of`'s postings (default: the driver's). Driven by the word with the
    fewest positions: its positions, moved back to where the phrase would start, are looked up
    in each other word's (so a common word's are only searched)."""
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
    own = by_word[rows_of or driver]
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
    prefix: tuple[str, str] | None = None,
    with_rows: bool = True,
) -> dict[str, Postings]:
    """The postings of `lexemes` (with `prefix`: of every lexeme in that range instead) over
    chunks [since, until); with `near` (ascending chunks), only in those chunks, read from the
    blocks that hold one of them. Without `with_rows`, their items and lengths are not read."""
    params: dict[str, Any] = {"source": source, "lexemes": list(lexemes), "since": since, "until": until}
    few = near is not None and len(near) <= NEAR_MAX
    sql = BLOCKS_SQL.replace("{near}", NEAR_SQL if few else "").replace(
        "{words}", PREFIX if prefix else WORDS
    )
    sql = sql.replace("{rows}", ROWS if with_rows else NO_ROWS)
    if prefix is not None:
        params["low"], params["high"] = prefix
    if few and near is not None:
        params["near"] = "{" + ",".join(map(str, near.tolist())) + "}"  # psycopg dumps a list slowly
    rows = await rows_as(conn, user_id, on_postings(sql, user_id), params)
    by_word: dict[str, list[Row]] = {lexeme: [] for lexeme in lexemes}
    for lexeme, *columns in rows:
        by_word.setdefault(lexeme, []).append(tuple(columns))  # type: ignore[arg-type]
    return {lexeme: postings(blocks, near) for lexeme, blocks in by_word.items()}


class Kept(Protocol):
    """A word's postings held in memory (`common_words.Word`)."""

    def postings(self, since: int, until: int, rows: bool = True, near: np.ndarray | None = None) -> Postings:
        """Its postings in chunks [since, until), as `read` gives them (see `common_words`)."""


async def read_phrase(
    conn: Any,
    user_id: str,
    source: str,
    lexemes: Sequence[str],
    since: int = 0,
    until: int = EVERY,
    prefix: tuple[str, str] | None = None,
    kept: Mapping[str, Kept] | None = None,
) -> dict[str, Postings]:
    """The postings of a phrase's distinct whole words `lexemes` (rarest first) over [since,
    until): the rarest word's, then the other words' in its chunks alone (read from the blocks
    that hold them when they are few), without their items and lengths (a hit's are the rarest
    word's: `starts(…, rows_of=lexemes[0])`); with `prefix`, its lexemes' there too, as one word
    (`PREFIXED`). The words in `kept` are cut from memory, not read."""
    kept = kept or {}
    others: dict[str, Postings] | None = None
    if lexemes[0] in kept:
        rarest = {lexemes[0]: kept[lexemes[0]].postings(since, until)}
    elif (since, until) == (0, EVERY) and any(lexeme not in kept for lexeme in lexemes[1:]):
        # every chunk: the rarest word's blocks and the others' that hold its chunks in one
        # statement (`WINDOW_SQL` over all of them), not two round trips
        rest = [lexeme for lexeme in lexemes if lexeme not in kept]
        others = (await read_window(conn, user_id, source, rest, EVERY, EVERY)).by_word
        rarest = {lexemes[0]: others.pop(lexemes[0])}
    else:
        rarest = await read(conn, user_id, source, lexemes[:1], since, until)
    near = rarest[lexemes[0]].chunks
    rest = list(lexemes[1:])
    if not len(near):
        return rarest | {lexeme: postings([]) for lexeme in [*rest, *([PREFIXED] if prefix else [])]}
    found = rarest | {
        lexeme: kept[lexeme].postings(since, until, False, near) for lexeme in rest if lexeme in kept
    }
    rest = [lexeme for lexeme in rest if lexeme not in kept]
    if others is not None:
        found |= others
    elif rest:
        found |= await read(conn, user_id, source, rest, since, until, near, with_rows=False)
    if prefix is not None:
        starting = await read(conn, user_id, source, [], since, until, near, prefix, with_rows=False)
        found[PREFIXED] = merged(list(starting.values()))
    return found


@dataclass(frozen=True)
class Window:
    """The postings of a phrase's words in a window of its rarest word's newest chunks: they start
    at chunk `since`, hold `read` of its chunks, and are `everything` older than `until`."""

    by_word: dict[str, Postings]
    since: int
    read: int
    everything: bool


async def read_window(
    conn: Any,
    user_id: str,
    source: str,
    lexemes: Sequence[str],
    window: int,
    until: int,
    with_rows: bool = True,
) -> Window:
    """The postings of a phrase's distinct whole words `lexemes` (rarest first) in the newest
    `window` chunks of the rarest word older than `until` (and a few more: whole blocks), the
    others' in its chunks alone (`WINDOW_SQL`). Without `with_rows`, not even the rarest word's
    items and lengths are read (a kept word gives a hit's: `phrases.NewestPhrase`)."""
    params = {
        "source": source,
        "lexeme": lexemes[0],
        "window": window,
        "until": until,
        "rest": list(lexemes[1:]),
    }
    sql = WINDOW_SQL.replace("{rows}", ROWS if with_rows else NO_ROWS)
    rows = await rows_as(conn, user_id, on_postings(sql, user_id), params)
    mine = [r for r in rows if r[0] == 0]
    everything = not mine or len(mine) == int(mine[0][-2])
    since = 0 if everything else min(int(r[-4]) for r in mine)
    found = {lexemes[0]: postings([tuple(r[2:8]) for r in mine])}  # type: ignore[misc]
    near = found[lexemes[0]].chunks
    by_word: dict[str, list[Row]] = {lexeme: [] for lexeme in lexemes[1:]}
    for row in rows:
        if row[0] == 1:
            by_word[row[1]].append(tuple(row[2:8]))  # type: ignore[arg-type]
    found |= {lexeme: postings(blocks, near) for lexeme, blocks in by_word.items()}
    return Window(found, since, sum(int(r[-3]) for r in mine), everything)


def within(hits: list[Hit], since: int, until: int) -> list[Hit]:
    """The hits in chunks [since, until)."""
    return [h for h in hits if since <= h[0] < until]
