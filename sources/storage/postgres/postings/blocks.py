"""The bm25 postings as blocks: one row per (source, term, block of up to BLOCK chunks).

A row per (chunk, term) paid a row header, a line pointer and an index entry per posting, many
kilobytes per chunk (`docs/performance.md`, "PostgreSQL"). A block keeps a term's postings of up to BLOCK
chunks in parallel arrays (chunk, item, count in the title, count in the body, the chunk's
length in tokens, the positions as text "4,17"), so the row and index overhead is paid once per
block, and a full block is compressed by TOAST. The ranking unnests the blocks of its terms
(`bm25.py`): the same rows as before, so the scores are the same.

Kept current in the item's own transaction (`writing.py`): new postings are appended to the
term's last block while it has room, else they start a new one (`append`); an item's postings
are cut out of the blocks of its chunks' terms whose chunk range holds them (`cut`), which
gives each term's number of chunks removed, and a block left empty is deleted. One writer per
user and source at a time (the statistics row lock), so the last block read is still the last.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..schema import BLOCK, on_postings
from ..writers import arrays

TermPosting = tuple[int, int, int, str]
"""A term's posting in a batch: (its chunk's place in the batch, count in the title, count in
the body, positions "4,17"), as `tokens.index` gives them."""
Block = tuple[str, int, list[TermPosting]]
"""(lexeme, block, its postings) to write."""

LAST_BLOCKS_SQL = """SELECT q.lexeme, b.block, b.n
    FROM unnest(%(lexemes)s::text[]) AS q(lexeme)
    CROSS JOIN LATERAL (SELECT block, n FROM {postings}
        WHERE source = %(source)s AND lexeme = q.lexeme ORDER BY block DESC LIMIT 1) AS b"""
NEW_BLOCKS = """SELECT u.lexeme, u.block, u.n, u.first_chunk, u.last_chunk, u.chunks::bigint[] AS chunks,
        u.items::bigint[] AS items, u.tf_titles::int[] AS tf_titles, u.tf_bodies::int[] AS tf_bodies,
        u.dls::int[] AS dls, string_to_array(u.positions, ';') AS positions
    FROM unnest(%(lexemes)s::text[], %(blocks)s::int[], %(ns)s::int[], %(firsts)s::bigint[],
        %(lasts)s::bigint[], %(chunks)s::text[], %(items)s::text[], %(tf_titles)s::text[],
        %(tf_bodies)s::text[], %(dls)s::text[], %(positions)s::text[])
        AS u(lexeme, block, n, first_chunk, last_chunk, chunks, items, tf_titles, tf_bodies, dls,
            positions)"""
"""The new postings, a row per (term, block), each array a literal (`pack`): the server parses
them, it does not group or sort the postings."""
INSERT_SQL = f"""INSERT INTO {{postings}} (user_id, source, lexeme, block, n, first_chunk, last_chunk,
        chunks, items, tf_titles, tf_bodies, dls, positions)
    SELECT %(user)s, %(source)s, a.* FROM ({NEW_BLOCKS}) AS a ORDER BY a.lexeme, a.block"""
APPEND_SQL = f"""UPDATE {{postings}} AS b SET n = b.n + a.n,
        first_chunk = least(b.first_chunk, a.first_chunk), last_chunk = greatest(b.last_chunk, a.last_chunk),
        chunks = b.chunks || a.chunks, items = b.items || a.items, tf_titles = b.tf_titles || a.tf_titles,
        tf_bodies = b.tf_bodies || a.tf_bodies, dls = b.dls || a.dls, positions = b.positions || a.positions
    FROM ({NEW_BLOCKS}) AS a
    WHERE b.source = %(source)s AND b.lexeme = a.lexeme AND b.block = a.block"""
CUT_SQL = """UPDATE {postings} AS b SET n = k.n, first_chunk = k.first_chunk, last_chunk = k.last_chunk,
        chunks = k.chunks, items = k.items, tf_titles = k.tf_titles, tf_bodies = k.tf_bodies,
        dls = k.dls, positions = k.positions
    FROM (SELECT old.lexeme, old.block, old.n AS was, kept.*
        FROM {postings} AS old
        CROSS JOIN LATERAL (SELECT count(*)::int AS n, min(u.chunk) AS first_chunk,
                max(u.chunk) AS last_chunk, array_agg(u.chunk ORDER BY u.o) AS chunks,
                array_agg(u.item ORDER BY u.o) AS items, array_agg(u.tf_title ORDER BY u.o) AS tf_titles,
                array_agg(u.tf_body ORDER BY u.o) AS tf_bodies, array_agg(u.dl ORDER BY u.o) AS dls,
                array_agg(u.positions ORDER BY u.o) AS positions
            FROM unnest(old.chunks, old.items, old.tf_titles, old.tf_bodies, old.dls, old.positions)
                WITH ORDINALITY AS u(chunk, item, tf_title, tf_body, dl, positions, o)
            WHERE u.item <> %(item)s) AS kept
        WHERE old.source = %(source)s AND old.lexeme = ANY(%(lexemes)s::text[])
            AND old.last_chunk >= %(low)s AND old.first_chunk <= %(high)s
            AND %(item)s = ANY(old.items)) AS k
    WHERE b.source = %(source)s AND b.lexeme = k.lexeme AND b.block = k.block
    RETURNING k.lexeme, k.was - k.n"""
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
    "positions",
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
    `last`: each term's last block and its size. A term's new postings go to its last block if
    they all fit, else to new blocks of up to BLOCK after it."""
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


def pack(blocks: Sequence[Block], chunks: Chunks) -> dict[str, str]:
    """`NEW_BLOCKS`'s parameters: a block's arrays as literals, one text each (its positions
    joined by ";": they hold none)."""
    columns: dict[str, list[Any]] = {name: [] for name in NEW_COLUMNS}
    ids = chunks.ids.__getitem__
    for lexeme, block, mine in blocks:
        places, titles, bodies, positions = zip(*mine, strict=True)
        rowids = list(map(ids, places))
        columns["lexemes"].append(lexeme)
        columns["blocks"].append(block)
        columns["ns"].append(len(mine))
        columns["firsts"].append(min(rowids))
        columns["lasts"].append(max(rowids))
        columns["chunks"].append(arrays.numbers(rowids))
        columns["items"].append("{" + ",".join(map(chunks.items.__getitem__, places)) + "}")
        columns["tf_titles"].append(arrays.numbers(titles))
        columns["tf_bodies"].append(arrays.numbers(bodies))
        columns["dls"].append("{" + ",".join(map(chunks.lengths.__getitem__, places)) + "}")
        columns["positions"].append(";".join(positions))
    return {n: arrays.numbers(c) if n in NUMBERS else arrays.texts(c) for n, c in columns.items()}


async def append(
    conn: Any, user_id: str, source: str, postings: dict[str, list[TermPosting]], chunks: Chunks
) -> None:
    """Add `postings` (by term, of `chunks`) to the blocks of `user_id`'s `source` (the terms'
    last blocks, or new ones)."""
    params: dict[str, Any] = {"user": user_id, "source": source, "lexemes": sorted(postings)}
    found = await (await conn.execute(on_postings(LAST_BLOCKS_SQL, user_id), params)).fetchall()
    appended, fresh = placed(postings, {lexeme: (int(b), int(n)) for lexeme, b, n in found})
    literals = pack(appended, chunks) if appended else None
    packing = asyncio.ensure_future(asyncio.to_thread(pack, fresh, chunks))  # while the server appends
    try:
        if literals is not None:
            await conn.execute(on_postings(APPEND_SQL, user_id), params | literals)
    finally:
        literals = await packing
    if fresh:
        await conn.execute(on_postings(INSERT_SQL, user_id), params | literals)


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
    lost: dict[str, int] = {}
    for lexeme, count in await (await conn.execute(on_postings(CUT_SQL, user_id), params)).fetchall():
        lost[lexeme] = lost.get(lexeme, 0) + int(count)
    await conn.execute(on_postings(DROP_EMPTY_SQL, user_id), params)
    return lost
