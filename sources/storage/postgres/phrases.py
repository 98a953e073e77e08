"""A phrase's hits in the PostgreSQL store, from the positions its words' postings keep.

FTS5 counts a phrase's instances in each column (`tokens.TITLE_BASE` keeps the columns apart in
the positions). A phrase of whole words is counted in the database, in one statement: the
postings of its words are joined on the chunk, driven by its rarest word (so positions are read
only in that word's chunks, and kept only where every word is), and a chunk's instances are the
starts p with word i at p + i (found from the rarest word's positions).
Only the chunks the phrase occurs in come back, not every candidate's positions: a phrase of
stop words (`"in the"`) no longer ships every chunk's positions to Python. A phrase ending in a
prefix reads the postings of its words and of every lexeme that prefix starts, in the chunks of
its rarest whole word, and counts them here. Exact either way, and never the chunks' text.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ...search.query import Term
from ...search.stemming import stems
from .schema import on_postings
from .tokens import phrase_starts

TOP = "\U0010ffff"
"""Above every character: a prefix's lexemes are the range [prefix, prefix + TOP)."""
DOCS_SQL = """SELECT lexeme, docs FROM pg_term_docs
    WHERE user_id = %(user)s AND source = %(source)s AND lexeme = ANY(%(lexemes)s::text[])"""
CHUNKS_SQL = """SELECT unnest(chunks) FROM {postings} WHERE source = %(source)s AND lexeme = %(rarest)s"""
UNNESTED = (
    """CROSS JOIN LATERAL unnest(b.chunks, b.items, b.dls, b.positions) AS p(chunk, item, dl, positions)"""
)
"""A block's postings as rows (`postings/blocks.py`); positions as text "4,17" (`POSITIONS`: as int[])."""
POSITIONS = "string_to_array({p}.positions, ',')::int[]"
POSITIONS_SQL = f"""SELECT b.lexeme, p.chunk, p.item, p.dl, {POSITIONS.format(p="p")}
    FROM unnest(%(lexemes)s::text[]) AS q(lexeme)
    CROSS JOIN LATERAL (SELECT lexeme, chunks, items, dls, positions FROM {{postings}}
        WHERE source = %(source)s AND lexeme = q.lexeme) AS b
    {UNNESTED}
    WHERE p.chunk = ANY(%(chunks)s::bigint[])"""
PREFIX_POSITIONS_SQL = f"""SELECT b.lexeme, p.chunk, p.item, p.dl, {POSITIONS.format(p="p")}
    FROM {{postings}} b
    {UNNESTED}
    WHERE b.source = %(source)s AND b.lexeme >= %(low)s AND b.lexeme < %(high)s
        AND p.chunk = ANY(%(chunks)s::bigint[])"""


WORD_SQL = f"""(SELECT p.* FROM {{postings}} b {UNNESTED}
        WHERE b.source = %(source)s AND b.lexeme = %(l{{i}})s{{since}})"""
SINCE_SQL = """ AND b.last_chunk >= %(since)s AND p.chunk >= %(since)s"""
"""Only the chunks from `since` on (a sample of the newest: `newest_phrase_hits`)."""
SINCE_OF_SQL = """SELECT coalesce(min(first_chunk) FILTER (WHERE newer < %(window)s), 0),
        bool_and(newer < %(window)s)
    FROM (SELECT first_chunk, sum(n) OVER (ORDER BY last_chunk DESC) - n AS newer FROM {postings}
        WHERE source = %(source)s AND lexeme = %(l0)s) AS w"""
"""Where the newest `window` chunks of the phrase's rarest word start, and whether that is all of them
(a word's blocks hold disjoint chunk ranges)."""
PHRASE_SQL = f"""SELECT p0.chunk, p0.item, s.in_title, s.in_body, p0.dl
    FROM {WORD_SQL.replace("{i}", "0")} p0
    {{joins}}
    CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE x < {{at}}) AS in_title,
            count(*) FILTER (WHERE x >= {{at}}) AS in_body
        FROM (SELECT {{arrays}} OFFSET 0) AS a CROSS JOIN LATERAL unnest(a.a0) AS x WHERE {{follows}}) AS s
    WHERE s.in_title > 0 OR s.in_body > 0
    ORDER BY p0.chunk"""
"""Each word's positions are parsed once per chunk that holds them all (`a.a<i>`; OFFSET 0 keeps
the planner from parsing them for every position of the rarest word, or for every chunk of a
common word before the join)."""
JOINED_SQL = """(SELECT p.chunk, p.positions FROM {postings} b
        CROSS JOIN LATERAL unnest(b.chunks, b.positions) AS p(chunk, positions)
        WHERE b.source = %(source)s AND b.lexeme = %(l{i})s{since})"""
"""A further word's postings: only the columns the phrase reads of them."""
JOIN_SQL = f"""JOIN {JOINED_SQL} p{{i}} ON p{{i}}.chunk = p0.chunk"""
ARRAY_SQL = POSITIONS.format(p="p{i}") + " AS a{i}"
FOLLOWS_SQL = "x + {shift} = ANY(a.a{i})"


def phrase_sql(words: list[str], lexemes: list[str], since: bool = False) -> str:
    """The statement counting a phrase of `words` (stems, ≥ 2) in each chunk that holds it: the
    postings of its distinct `lexemes` (`l0`, `l1`, …; rarest first) joined on the chunk, and the
    rarest's positions x (at `words.index(l0)` in the phrase) that have every word i at the
    shift x + i - at. The planner drives the join from the rarest word's few rows."""
    at = words.index(lexemes[0])
    joins = "\n    ".join(JOIN_SQL.replace("{i}", str(i)) for i in range(1, len(lexemes)))
    follows = " AND ".join(
        FOLLOWS_SQL.format(shift=i - at, i=lexemes.index(word)) for i, word in enumerate(words) if i != at
    )
    arrays = ", ".join(ARRAY_SQL.format(i=i) for i in range(len(lexemes)))
    sql = PHRASE_SQL.replace("{joins}", joins).replace("{follows}", follows).replace("{at}", str(at))
    sql = sql.replace("{arrays}", arrays)
    return sql.replace("{since}", SINCE_SQL if since else "")


@dataclass(frozen=True)
class PhraseHits:
    """The chunks a phrase occurs in: (chunk, item, count in title, count in body, tokens)."""

    chunks: list[tuple[int, int, int, int, int]]


async def phrase_hits(
    conn: Any, source: str, user_id: str, terms: list[Term], known: dict[str, int] | None = None
) -> list[PhraseHits]:
    """Each phrase's hits among `user_id`'s chunks of `source`. `known`: the chunk counts of
    (at least) the phrases' words, read already (a word missing there is in no chunk)."""
    return [await _hits(conn, source, user_id, term, known) for term in terms]


async def _hits(conn: Any, source: str, user_id: str, term: Term, known: dict[str, int] | None) -> PhraseHits:
    words = stems(term.words)
    whole = words[:-1] if term.prefix else words
    # no prefix: an empty range (low = high)
    low, high = (words[-1], words[-1] + TOP) if term.prefix else ("", "")
    params = {"user": user_id, "source": source, "lexemes": sorted(set(whole)), "low": low, "high": high}
    if known is None:
        docs = dict(await (await conn.execute(DOCS_SQL, params)).fetchall())
    else:
        docs = {lexeme: known[lexeme] for lexeme in params["lexemes"] if lexeme in known}
    if len(docs) < len(params["lexemes"]):
        return PhraseHits([])  # a word no chunk holds
    if not term.prefix:
        lexemes = sorted(docs, key=lambda lexeme: (docs[lexeme], lexeme))
        params |= {f"l{i}": lexeme for i, lexeme in enumerate(lexemes)}
        rows = await (await conn.execute(on_postings(phrase_sql(words, lexemes), user_id), params)).fetchall()
        return PhraseHits([(int(c), int(i), int(t), int(b), int(n)) for c, i, t, b, n in rows])
    # only the chunks of the phrase's rarest whole word can hold it
    params["rarest"] = min(docs, key=lambda lexeme: (docs[lexeme], lexeme))
    candidates = await (await conn.execute(on_postings(CHUNKS_SQL, user_id), params)).fetchall()
    params["chunks"] = [c for (c,) in candidates]
    rows = await (await conn.execute(on_postings(POSITIONS_SQL, user_id), params)).fetchall()
    if term.prefix:
        rows += await (await conn.execute(on_postings(PREFIX_POSITIONS_SQL, user_id), params)).fetchall()
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


async def newest_phrase_hits(
    conn: Any, source: str, user_id: str, term: Term, enough: int
) -> tuple[PhraseHits, bool]:
    """A phrase of whole words' hits among the newest chunks of its rarest word, at least `enough`
    of them when it has that many (the window grows four times at a time), and whether they are
    all its hits. A sample of a phrase of common words reads its newest chunks, not all."""
    words = stems(term.words)
    params: dict[str, Any] = {"user": user_id, "source": source, "lexemes": sorted(set(words))}
    docs = dict(await (await conn.execute(DOCS_SQL, params)).fetchall())
    if len(docs) < len(params["lexemes"]):
        return PhraseHits([]), True
    lexemes = sorted(docs, key=lambda lexeme: (docs[lexeme], lexeme))
    params |= {f"l{i}": lexeme for i, lexeme in enumerate(lexemes)}
    window = max(1, enough)
    while True:
        params["window"] = window
        found = await conn.execute(on_postings(SINCE_OF_SQL, user_id), params)
        since, everything = await found.fetchone()
        params["since"] = 0 if everything else int(since)
        sql = on_postings(phrase_sql(words, lexemes, since=True), user_id)
        rows = await (await conn.execute(sql, params)).fetchall()
        hits = PhraseHits([(int(c), int(i), int(t), int(b), int(n)) for c, i, t, b, n in rows])
        if everything or len(hits.chunks) >= enough:
            return hits, bool(everything)
        window *= 4
