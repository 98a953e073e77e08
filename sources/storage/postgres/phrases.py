"""A phrase's hits in the PostgreSQL store, from the positions its words' postings keep.

FTS5 counts a phrase's instances in each column; here the postings of the phrase's words (and,
for a phrase ending in a prefix, of every lexeme that prefix starts) are read with their
positions (`tokens.TITLE_BASE` keeps the columns apart), only in the chunks of its rarest
whole word, and the instances are counted for each chunk that holds every word: exact, and
never the chunks' text.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ...search.query import Term
from ...search.stemming import stems
from .tokens import phrase_starts

TOP = "\U0010ffff"
"""Above every character: a prefix's lexemes are the range [prefix, prefix + TOP)."""
DOCS_SQL = """SELECT lexeme, docs FROM pg_term_docs
    WHERE user_id = %(user)s AND source = %(source)s AND lexeme = ANY(%(lexemes)s::text[])"""
CHUNKS_SQL = """SELECT chunk FROM pg_postings
    WHERE user_id = %(user)s AND source = %(source)s AND lexeme = %(rarest)s"""
POSITIONS_SQL = """SELECT p.lexeme, p.chunk, p.item, p.dl, p.positions
    FROM unnest(%(lexemes)s::text[]) AS q(lexeme)
    CROSS JOIN LATERAL (SELECT lexeme, chunk, item, dl, positions FROM pg_postings
        WHERE user_id = %(user)s AND source = %(source)s AND lexeme = q.lexeme
            AND chunk = ANY(%(chunks)s::bigint[])) AS p"""
PREFIX_POSITIONS_SQL = """SELECT lexeme, chunk, item, dl, positions FROM pg_postings
    WHERE user_id = %(user)s AND source = %(source)s AND lexeme >= %(low)s AND lexeme < %(high)s
        AND chunk = ANY(%(chunks)s::bigint[])"""


@dataclass(frozen=True)
class PhraseHits:
    """The chunks a phrase occurs in: (chunk, item, count in title, count in body, tokens)."""

    chunks: list[tuple[int, int, int, int, int]]


async def phrase_hits(conn: Any, source: str, user_id: str, terms: list[Term]) -> list[PhraseHits]:
    """Each phrase's hits among `user_id`'s chunks of `source`."""
    return [await _hits(conn, source, user_id, term) for term in terms]


async def _hits(conn: Any, source: str, user_id: str, term: Term) -> PhraseHits:
    words = stems(term.words)
    whole = words[:-1] if term.prefix else words
    # no prefix: an empty range (low = high)
    low, high = (words[-1], words[-1] + TOP) if term.prefix else ("", "")
    params = {"user": user_id, "source": source, "lexemes": sorted(set(whole)), "low": low, "high": high}
    docs = dict(await (await conn.execute(DOCS_SQL, params)).fetchall())
    if len(docs) < len(params["lexemes"]):
        return PhraseHits([])  # a word no chunk holds
    # only the chunks of the phrase's rarest whole word can hold it
    params["rarest"] = min(docs, key=lambda lexeme: (docs[lexeme], lexeme))
    params["chunks"] = [c for (c,) in await (await conn.execute(CHUNKS_SQL, params)).fetchall()]
    rows = await (await conn.execute(POSITIONS_SQL, params)).fetchall()
    if term.prefix:
        rows += await (await conn.execute(PREFIX_POSITIONS_SQL, params)).fetchall()
    at: dict[int, dict[str, set[int]]] = defaultdict(dict)
    sizes: dict[int, tuple[int, int]] = {}
    for lexeme, chunk, item, length, positions in rows:
        mine = at[chunk]
        if term.prefix and lexeme >= low and lexeme < high:
            mine.setdefault("", set()).update(positions)  # the prefix's lexemes, together
        if lexeme in whole:
            mine[lexeme] = set(positions)
        sizes[chunk] = (int(item), int(length))
    keys = [*whole, ""] if term.prefix else whole
    found: list[tuple[int, int, int, int, int]] = []
    for chunk in sorted(at):
        mine = at[chunk]
        if all(k in mine for k in keys):
            in_title, in_body = phrase_starts([mine[k] for k in keys])
            if in_title or in_body:
                item, length = sizes[chunk]
                found.append((chunk, item, in_title, in_body, length))
    return PhraseHits(found)
