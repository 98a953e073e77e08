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

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..schema import BLOCK, on_postings
from ..writers import arrays

Posting = tuple[str, int, int, int, int, int, str]
"""(lexeme, chunk, item, count in title, count in body, chunk length, positions "4,17")."""

LAST_BLOCKS_SQL = """SELECT q.lexeme, b.block, b.n
    FROM unnest(%(lexemes)s::text[]) AS q(lexeme)
    CROSS JOIN LATERAL (SELECT block, n FROM {postings}
        WHERE source = %(source)s AND lexeme = q.lexeme ORDER BY block DESC LIMIT 1) AS b"""
NEW_POSTINGS = """SELECT u.lexeme, u.block, count(*)::int AS n, min(u.chunk) AS first_chunk,
        max(u.chunk) AS last_chunk, array_agg(u.chunk ORDER BY u.o) AS chunks,
        array_agg(u.item ORDER BY u.o) AS items, array_agg(u.tf_title ORDER BY u.o) AS tf_titles,
        array_agg(u.tf_body ORDER BY u.o) AS tf_bodies, array_agg(u.dl ORDER BY u.o) AS dls,
        array_agg(u.positions ORDER BY u.o) AS positions
    FROM unnest(%(lexemes)s::text[], %(blocks)s::int[], %(chunks)s::bigint[], %(items)s::bigint[],
        %(tf_titles)s::int[], %(tf_bodies)s::int[], %(dls)s::int[], %(positions)s::text[])
        WITH ORDINALITY AS u(lexeme, block, chunk, item, tf_title, tf_body, dl, positions, o)
    GROUP BY u.lexeme, u.block"""
INSERT_SQL = f"""INSERT INTO {{postings}} (user_id, source, lexeme, block, n, first_chunk, last_chunk,
        chunks, items, tf_titles, tf_bodies, dls, positions)
    SELECT %(user)s, %(source)s, a.* FROM ({NEW_POSTINGS}) AS a ORDER BY a.lexeme, a.block"""
APPEND_SQL = f"""UPDATE {{postings}} AS b SET n = b.n + a.n,
        first_chunk = least(b.first_chunk, a.first_chunk), last_chunk = greatest(b.last_chunk, a.last_chunk),
        chunks = b.chunks || a.chunks, items = b.items || a.items, tf_titles = b.tf_titles || a.tf_titles,
        tf_bodies = b.tf_bodies || a.tf_bodies, dls = b.dls || a.dls, positions = b.positions || a.positions
    FROM ({NEW_POSTINGS}) AS a
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
COLUMNS = ("lexemes", "blocks", "chunks", "items", "tf_titles", "tf_bodies", "dls", "positions")
TEXTS = frozenset({"lexemes", "positions"})


def placed(postings: Sequence[Posting], last: dict[str, tuple[int, int]]) -> tuple[list[Any], list[Any]]:
    """`postings` given their blocks: (appended to a term's last block, in new blocks), each a
    list of (lexeme, block, chunk, item, tf_title, tf_body, dl, positions). `last`: each term's
    last block and its size. A term's new postings go to its last block if they all fit, else to
    new blocks of up to BLOCK after it."""
    by_term: dict[str, list[Posting]] = defaultdict(list)
    for posting in postings:
        by_term[posting[0]].append(posting)
    appended: list[Any] = []
    fresh: list[Any] = []
    for lexeme, mine in by_term.items():
        block, size = last.get(lexeme, (-1, BLOCK))
        if size + len(mine) <= BLOCK:
            appended += [(lexeme, block, *p[1:]) for p in mine]
            continue
        for start in range(0, len(mine), BLOCK):
            fresh += [(lexeme, block + 1 + start // BLOCK, *p[1:]) for p in mine[start : start + BLOCK]]
    return appended, fresh


async def append(conn: Any, user_id: str, source: str, postings: Sequence[Posting]) -> None:
    """Add `postings` to the blocks of `user_id`'s `source` (the terms' last blocks, or new ones)."""
    lexemes = sorted({p[0] for p in postings})
    params: dict[str, Any] = {"user": user_id, "source": source, "lexemes": lexemes}
    found = await (await conn.execute(on_postings(LAST_BLOCKS_SQL, user_id), params)).fetchall()
    appended, fresh = placed(postings, {lexeme: (int(b), int(n)) for lexeme, b, n in found})
    for rows, sql in ((appended, APPEND_SQL), (fresh, INSERT_SQL)):
        if rows:
            columns = zip(COLUMNS, zip(*rows, strict=True), strict=True)
            literals = {n: arrays.texts(c) if n in TEXTS else arrays.numbers(c) for n, c in columns}
            await conn.execute(on_postings(sql, user_id), params | literals)


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
