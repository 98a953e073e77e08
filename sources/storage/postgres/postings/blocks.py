"""The bm25 postings as blocks: one row per (source, term, block of up to BLOCK chunks).

A row per (chunk, term) paid a row header, a line pointer and an index entry per posting, many
kilobytes per chunk (`docs/performance.md`, "PostgreSQL"). A block keeps a term's postings of up to BLOCK
chunks in parallel arrays (chunk, item, count in the title, count in the body, the chunk's
length in tokens) and their word positions as bytes (`places`: `positions.py`), so the row and
index overhead is paid once per block. The ranking unnests the blocks of its terms (`bm25.py`):
the same rows as before, so the scores are the same.

Kept current in the item's own transaction (`writing.py`): new postings are appended to the
term's last block while it has room (and is not wide), else they start a new one (`append`); an
item's postings are cut out of the blocks of its chunks' terms whose chunk range holds them
(`cut`: the blocks read, their other postings written back), which gives each term's number of
chunks removed, and a block left empty is deleted. One writer per user and source at a time
(the statistics row lock), so the last block read is still the last.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..schema import BLOCK, on_postings
from ..writers import arrays
from . import positions

TermPosting = tuple[int, int, int, str]
"""A term's posting in a batch: (its chunk's place in the batch, count in the title, count in
the body, positions "4,17"), as `tokens.index` gives them."""
Block = tuple[str, int, list[TermPosting]]
"""(lexeme, block, its postings) to write."""

LAST_BLOCKS_SQL = """SELECT q.lexeme, b.block, b.n, octet_length(b.places) %% 2 = 1
    FROM unnest(%(lexemes)s::text[]) AS q(lexeme)
    CROSS JOIN LATERAL (SELECT block, n, places FROM {postings}
        WHERE source = %(source)s AND lexeme = q.lexeme ORDER BY block DESC LIMIT 1) AS b"""
NEW_BLOCKS = """SELECT u.lexeme, u.block, u.n, u.first_chunk, u.last_chunk, u.chunks::bigint[] AS chunks,
        u.items::bigint[] AS items, u.tf_titles::int[] AS tf_titles, u.tf_bodies::int[] AS tf_bodies,
        u.dls::int[] AS dls, decode(u.places, 'hex') AS places
    FROM unnest(%(lexemes)s::text[], %(blocks)s::int[], %(ns)s::int[], %(firsts)s::bigint[],
        %(lasts)s::bigint[], %(chunks)s::text[], %(items)s::text[], %(tf_titles)s::text[],
        %(tf_bodies)s::text[], %(dls)s::text[], %(places)s::text[])
        AS u(lexeme, block, n, first_chunk, last_chunk, chunks, items, tf_titles, tf_bodies, dls,
            places)"""
"""The new postings, a row per (term, block), each array a literal (`pack`) and the places in
hex: the server parses them, it does not group or sort the postings."""
INSERT_SQL = f"""INSERT INTO {{postings}} (user_id, source, lexeme, block, n, first_chunk, last_chunk,
        chunks, items, tf_titles, tf_bodies, dls, places)
    SELECT %(user)s, %(source)s, a.* FROM ({NEW_BLOCKS}) AS a ORDER BY a.lexeme, a.block"""
APPEND_SQL = f"""UPDATE {{postings}} AS b SET n = b.n + a.n,
        first_chunk = least(b.first_chunk, a.first_chunk), last_chunk = greatest(b.last_chunk, a.last_chunk),
        chunks = b.chunks || a.chunks, items = b.items || a.items, tf_titles = b.tf_titles || a.tf_titles,
        tf_bodies = b.tf_bodies || a.tf_bodies, dls = b.dls || a.dls, places = b.places || a.places
    FROM ({NEW_BLOCKS}) AS a
    WHERE b.source = %(source)s AND b.lexeme = a.lexeme AND b.block = a.block"""
CUT_READ_SQL = """SELECT lexeme, block, chunks, items, tf_titles, tf_bodies, dls, places FROM {postings}
    WHERE source = %(source)s AND lexeme = ANY(%(lexemes)s::text[])
        AND last_chunk >= %(low)s AND first_chunk <= %(high)s AND %(item)s = ANY(items)"""
"""The blocks holding an item's postings: of its terms, whose chunk range meets its chunks'."""
CUT_SQL = f"""UPDATE {{postings}} AS b SET n = a.n, first_chunk = a.first_chunk, last_chunk = a.last_chunk,
        chunks = a.chunks, items = a.items, tf_titles = a.tf_titles, tf_bodies = a.tf_bodies, dls = a.dls,
        places = a.places
    FROM ({NEW_BLOCKS}) AS a
    WHERE b.source = %(source)s AND b.lexeme = a.lexeme AND b.block = a.block"""
"""The blocks' postings that are kept, written back (`pack_kept`)."""
DROP_EMPTY_SQL = """DELETE FROM {postings}
    WHERE source = %(source)s AND lexeme = ANY(%(lexemes)s::text[]) AND n = 0"""
NEW_COLUMNS = (
    "lexemes",
    "blocks",
    "ns",
    "firsts",
    "lasts",
    "chunks",
    "items",
    "tf_titles",
    "tf_bodies",
    "dls",
    "places",
)
NUMBERS = frozenset({"blocks", "ns", "firsts", "lasts"})


@dataclass(frozen=True)
class Chunks:
    """The batch's chunks, by their place in it (a `TermPosting`'s first field): rowids, items'
    rowids and lengths in tokens, as they go in array literals."""

    ids: list[int]
    items: list[str]
    lengths: list[str]


def placed(
    postings: dict[str, list[TermPosting]], last: dict[str, tuple[int, int]]
) -> tuple[list[Block], list[Block]]:
    """Each term's new `postings` in their blocks: (appended to a term's last block, new blocks).
    `last`: each term's last block and its size (BLOCK: it takes no more). A term's new postings
    go to its last block if they all fit, else to new blocks of up to BLOCK after it."""
    appended: list[Block] = []
    fresh: list[Block] = []
    for lexeme, mine in postings.items():
        block, size = last.get(lexeme, (-1, BLOCK))
        if size + len(mine) <= BLOCK:
            appended.append((lexeme, block, mine))
            continue
        for start in range(0, len(mine), BLOCK):
            fresh.append((lexeme, block + 1 + start // BLOCK, mine[start : start + BLOCK]))
    return appended, fresh


def _places(blocks: Sequence[Block]) -> list[str]:
    """Each block's `places` (`positions.py`) in hex, from its postings' texts, parsed at once."""
    texts = [p[3] for _, _, mine in blocks for p in mine]
    sizes = np.fromiter((sum(p[1] + p[2] for p in mine) for _, _, mine in blocks), np.int64, len(blocks))
    ends = np.cumsum(sizes).tolist()
    starts = [0, *ends[:-1]]
    if not texts:
        return ["" for _ in blocks]
    places = positions.places_of(np.fromstring(",".join(texts), dtype=np.int64, sep=","))
    if int(places.max()) < positions.LIMIT:  # all narrow: converted in one pass
        hexed = places.astype(positions.NARROW).tobytes().hex()
        return [hexed[4 * a : 4 * b] for a, b in zip(starts, ends, strict=True)]
    return [positions.encode(places[a:b]).hex() for a, b in zip(starts, ends, strict=True)]


def pack(blocks: Sequence[Block], chunks: Chunks) -> dict[str, str]:
    """`NEW_BLOCKS`'s parameters: a block's arrays as literals, one text each, and its places."""
    columns: dict[str, list[Any]] = {name: [] for name in NEW_COLUMNS}
    ids = chunks.ids.__getitem__
    for lexeme, block, mine in blocks:
        at, titles, bodies, _ = zip(*mine, strict=True)
        rowids = list(map(ids, at))
        columns["lexemes"].append(lexeme)
        columns["blocks"].append(block)
        columns["ns"].append(len(mine))
        columns["firsts"].append(min(rowids))
        columns["lasts"].append(max(rowids))
        columns["chunks"].append(arrays.numbers(rowids))
        columns["items"].append("{" + ",".join(map(chunks.items.__getitem__, at)) + "}")
        columns["tf_titles"].append(arrays.numbers(titles))
        columns["tf_bodies"].append(arrays.numbers(bodies))
        columns["dls"].append("{" + ",".join(map(chunks.lengths.__getitem__, at)) + "}")
    columns["places"] = _places(blocks)
    return {n: arrays.numbers(c) if n in NUMBERS else arrays.texts(c) for n, c in columns.items()}


def _last(
    found: Sequence[tuple[Any, ...]], postings: dict[str, list[TermPosting]], chunks: Chunks
) -> dict[str, tuple[int, int]]:
    """Each term's last block and its size from `LAST_BLOCKS_SQL`'s rows; full when it is wide, or
    when new postings of chunks too long for a narrow block would go to it."""
    long = {n for n, length in enumerate(chunks.lengths) if int(length) > positions.LIMIT}
    last: dict[str, tuple[int, int]] = {}
    for lexeme, block, n, wide in found:
        full = wide or (long and any(p[0] in long for p in postings[lexeme]))
        last[lexeme] = (int(block), BLOCK if full else int(n))
    return last


async def append(
    conn: Any, user_id: str, source: str, postings: dict[str, list[TermPosting]], chunks: Chunks
) -> None:
    """Add `postings` (by term, of `chunks`) to the blocks of `user_id`'s `source` (the terms'
    last blocks, or new ones)."""
    params: dict[str, Any] = {"user": user_id, "source": source, "lexemes": sorted(postings)}
    found = await (await conn.execute(on_postings(LAST_BLOCKS_SQL, user_id), params)).fetchall()
    appended, fresh = placed(postings, _last(found, postings, chunks))
    literals = pack(appended, chunks) if appended else None
    packing = asyncio.ensure_future(asyncio.to_thread(pack, fresh, chunks))  # while the server appends
    try:
        if literals is not None:
            await conn.execute(on_postings(APPEND_SQL, user_id), params | literals)
    finally:
        literals = await packing
    if fresh:
        await conn.execute(on_postings(INSERT_SQL, user_id), params | literals)


def kept(rows: Sequence[tuple[Any, ...]], item: int) -> tuple[dict[str, str], dict[str, int]]:
    """`CUT_SQL`'s parameters: the blocks of `CUT_READ_SQL`'s rows without item `item`'s
    postings (their places cut out by each posting's bounds, not decoded); how many chunks each
    term lost."""
    columns: dict[str, list[Any]] = {name: [] for name in NEW_COLUMNS}
    lost: dict[str, int] = {}
    for lexeme, block, chunk_ids, items, titles, bodies, dls, data in rows:
        keep = np.asarray(items, dtype=np.int64) != item
        counts = np.asarray(titles, dtype=np.int64) + np.asarray(bodies, dtype=np.int64)
        lost[lexeme] = lost.get(lexeme, 0) + int(len(keep) - keep.sum())
        ids = [c for c, k in zip(chunk_ids, keep.tolist(), strict=True) if k]
        columns["lexemes"].append(lexeme)
        columns["blocks"].append(block)
        columns["ns"].append(len(ids))
        columns["firsts"].append(min(ids, default=None))
        columns["lasts"].append(max(ids, default=None))
        for name, values in (
            ("chunks", chunk_ids),
            ("items", items),
            ("tf_titles", titles),
            ("tf_bodies", bodies),
            ("dls", dls),
        ):
            columns[name].append(arrays.numbers(v for v, k in zip(values, keep.tolist(), strict=True) if k))
        columns["places"].append(positions.cut(bytes(data), counts, keep).hex())
    return {n: arrays.numbers(c) if n in NUMBERS else arrays.texts(c) for n, c in columns.items()}, lost


async def cut(
    conn: Any, user_id: str, source: str, item: int, lexemes: Sequence[str], chunks: Sequence[int]
) -> dict[str, int]:
    """Take item `item`'s postings (its `chunks`, holding `lexemes`) out of the blocks; how many
    chunks each term lost. Only the blocks whose chunk range meets the item's are read."""
    if not lexemes or not chunks:
        return {}
    params = {
        "source": source,
        "item": item,
        "lexemes": sorted(set(lexemes)),
        "low": min(chunks),
        "high": max(chunks),
    }
    found = await conn.execute(on_postings(CUT_READ_SQL, user_id), params, binary=True)
    rows = await found.fetchall()
    if not rows:
        return {}
    literals, lost = kept(rows, item)
    await conn.execute(on_postings(CUT_SQL, user_id), params | literals)
    await conn.execute(on_postings(DROP_EMPTY_SQL, user_id), params)
    return lost
