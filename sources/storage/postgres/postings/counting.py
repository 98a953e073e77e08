"""A query's terms counted in the postings, for the ranking (`bm25.py`): a prefix's chunks, the
chunks of each term in the columns a field-limited search allows, and which returned chunks hold
the terms left out of the score (in most chunks), which SQLite tells among matched terms too."""

from __future__ import annotations

from typing import Any

from ....search.query import TOP, ParsedQuery
from ..phrases import PhraseHits
from ..schema import on_postings
from .terms import TermPlan, bit

PREFIX_DOCS_SQL = """SELECT q.n, (SELECT count(DISTINCT c.chunk) FROM {postings} p
        CROSS JOIN LATERAL unnest(p.chunks) AS c(chunk)
        WHERE p.source = %(source)s AND p.lexeme >= q.low AND p.lexeme < q.high)
    FROM unnest(%(lows)s::text[], %(highs)s::text[], %(ns)s::int[]) AS q(low, high, n)"""
COLUMN_DOCS_SQL = """SELECT q.n, (SELECT count(DISTINCT u.chunk) FROM {{postings}} p
        CROSS JOIN LATERAL unnest(p.chunks, p.tf_titles, p.tf_bodies) AS u(chunk, tf_title, tf_body)
        WHERE p.source = %(source)s AND p.lexeme >= q.low AND p.lexeme < q.high AND ({fields}))
    FROM unnest(%(lows)s::text[], %(highs)s::text[], %(ns)s::int[]) AS q(low, high, n)"""
LOWEST = "\x01"
"""Below every character: a word's own lexeme is the range [word, word + LOWEST)."""
MATCHES_SQL = """SELECT DISTINCT q.n, c.chunk
    FROM unnest(%(lows)s::text[], %(highs)s::text[], %(ns)s::int[]) AS q(low, high, n)
    CROSS JOIN LATERAL (SELECT chunks FROM {postings}
        WHERE source = %(source)s AND lexeme >= q.low AND lexeme < q.high) AS p
    CROSS JOIN LATERAL unnest(p.chunks) AS c(chunk)
    WHERE c.chunk = ANY(%(chunks)s::bigint[])"""


async def left_out_bits(
    conn: Any,
    source: str,
    user_id: str,
    terms: TermPlan,
    hits: list[PhraseHits],
    left_out: list[int],
    chunks: list[int],
) -> dict[int, int]:
    """The bits of the terms left out of the score (in most chunks) that each returned chunk
    matches: SQLite tells them among a hit's matched terms too."""
    bits: dict[int, int] = {}
    if not left_out or not chunks:
        return bits
    ranges = [(n, w, w + LOWEST) for n, w in terms.words if n in left_out]
    ranges += [(n, p, p + TOP) for n, p in terms.prefixes if n in left_out]
    if ranges:
        lows, highs, ns = ([r[i] for r in ranges] for i in (1, 2, 0))
        params = {"user": user_id, "source": source, "lows": lows, "highs": highs, "ns": ns, "chunks": chunks}
        for n, chunk in await (await conn.execute(on_postings(MATCHES_SQL, user_id), params)).fetchall():
            bits[chunk] = bits.get(chunk, 0) | bit(n)
    wanted = set(chunks)
    for (n, _), found in zip(terms.phrases, hits, strict=True):
        for chunk in (c[0] for c in found.chunks if n in left_out and c[0] in wanted):
            bits[chunk] = bits.get(chunk, 0) | bit(n)
    return bits


async def in_columns(
    conn: Any,
    source: str,
    user_id: str,
    terms: TermPlan,
    hits: list[PhraseHits],
    rows: list[int],
    weights: tuple[float, float],
    columns: tuple[str, ...] | None,
) -> tuple[list[int], tuple[float, float]]:
    """The row counts idf is computed from and the column weights, when only `columns` match."""
    if columns is None:
        return rows, weights
    counted = list(rows)
    ranges = [(n, w, w + LOWEST) for n, w in terms.words] + [(n, p, p + TOP) for n, p in terms.prefixes]
    if ranges:
        lows, highs, ns = ([r[i] for r in ranges] for i in (1, 2, 0))
        fields = " OR ".join(f"tf_{c} > 0" for c in ("title", "body") if c in columns) or "FALSE"
        params = {"source": source, "lows": lows, "highs": highs, "ns": ns}
        sql = on_postings(COLUMN_DOCS_SQL.format(fields=fields), user_id)
        for n, count in await (await conn.execute(sql, params)).fetchall():  # type: ignore[arg-type]
            counted[n] = int(count)
    for (n, _), phrase in zip(terms.phrases, hits, strict=True):
        counted[n] = sum(
            1 for c in phrase.chunks if ("title" in columns and c[2]) or ("body" in columns and c[3])
        )
    return counted, (weights[0] * ("title" in columns), weights[1] * ("body" in columns))


async def term_rows(
    conn: Any, source: str, user_id: str, terms: TermPlan, query: ParsedQuery, docs: dict[str, int]
) -> list[int]:
    """Each query term's number of chunks (its df: a word's from `docs`, a prefix's counted
    here); phrases are filled in by the caller."""
    rows = [0] * len(query.terms)
    for n, lexeme in terms.words:
        rows[n] = docs.get(lexeme, 0)
    if terms.prefixes:
        params = {
            "user": user_id,
            "source": source,
            "lows": [p for _, p in terms.prefixes],
            "highs": [p + TOP for _, p in terms.prefixes],
            "ns": [n for n, _ in terms.prefixes],
        }
        for n, count in await (await conn.execute(on_postings(PREFIX_DOCS_SQL, user_id), params)).fetchall():
            rows[n] = int(count)
    return rows
