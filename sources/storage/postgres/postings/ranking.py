"""The ranking statement of `bm25.rank`: the query terms' postings unnested, scored by FTS5's
bm25 and cut to the best items (see `bm25.py` for the formula and what each part reads)."""

from __future__ import annotations

from typing import Any

# Each part reads its terms' posting blocks by the (source, lexeme, block) btree of the user's
# postings partition, driven by the small array of terms (LATERAL: the planner cannot turn it
# round into a scan of the whole partition, as it did for an empty array of prefixes), and
# unnests them: a row per (chunk, term) as a row-per-posting table had them.
UNNESTED = """CROSS JOIN LATERAL unnest(b.chunks, b.items, b.tf_titles, b.tf_bodies, b.dls)
        AS p(chunk, item, tf_title, tf_body, dl)"""
WORDS_PART = f"""SELECT q.n, p.chunk, p.item, p.tf_title, p.tf_body, p.dl
    FROM unnest(%(words)s::text[], %(word_ns)s::int[]) AS q(lexeme, n)
    CROSS JOIN LATERAL (SELECT chunks, items, tf_titles, tf_bodies, dls FROM {{postings}}
        WHERE source = %(source)s AND lexeme = q.lexeme{{blocks}}) AS b
    {UNNESTED}{{within}}"""
PREFIXES_PART = f"""SELECT q.n, p.chunk, p.item, p.tf_title, p.tf_body, p.dl
    FROM unnest(%(lows)s::text[], %(highs)s::text[], %(prefix_ns)s::int[]) AS q(low, high, n)
    CROSS JOIN LATERAL (SELECT chunks, items, tf_titles, tf_bodies, dls FROM {{postings}}
        WHERE source = %(source)s AND lexeme >= q.low AND lexeme < q.high{{blocks}} OFFSET 0) AS b
    {UNNESTED}{{within}}"""
"""`OFFSET 0`: the lateral subquery is not pulled up, so a generic plan too reads each prefix's
range by the index (pulled up, it scanned every block of the source and filtered the ranges:
`docs/postgresql.md`, "Session 17: the ranking planned once")."""
WITHIN_BLOCKS = " AND last_chunk >= %(within_lo)s AND first_chunk <= %(within_hi)s"
"""Only the blocks whose chunk range reaches the chunks scored (`Restriction.within`)."""
WITHIN_CHUNKS = "\n    WHERE p.chunk = ANY(%(within)s::bigint[])"
"""Only those chunks (a constant array: PostgreSQL hashes it)."""
CANDIDATES = """candidates AS MATERIALIZED ({candidates}),
    candidate_range AS (SELECT min(chunk) AS lo, max(chunk) AS hi FROM candidates),
    """
"""The chunks scored picked by a statement of their own (`Restriction.candidates`: its first
column), read in the ranking's statement: no round trip for them."""
CANDIDATE_BLOCKS = """ AND last_chunk >= (SELECT lo FROM candidate_range)
        AND first_chunk <= (SELECT hi FROM candidate_range)"""
CANDIDATE_CHUNKS = "\n    WHERE (p.chunk IN (SELECT chunk FROM candidates)) IS TRUE"
PHRASES_PART = """SELECT * FROM unnest(%(phrase_ns)s::int[], %(phrase_chunks)s::bigint[],
    %(phrase_items)s::bigint[], %(phrase_titles)s::int[], %(phrase_bodies)s::int[], %(phrase_dls)s::int[])
    AS u(n, chunk, item, tf_title, tf_body, dl)"""
RANK_SQL = """
WITH {candidates}hits AS (
    {parts}
), per_term AS (
    {per_term}
), scored AS (
    SELECT chunk, item,
        sum((%(idf)s::float8[])[n + 1] * f * %(k1p)s / (f + %(k1)s * (%(one_b)s + %(b_avg)s * dl))) AS score,
        bit_or(CASE WHEN n < %(bits)s THEN 1::bigint << n ELSE 0 END) AS bits
    FROM per_term GROUP BY chunk, item
), best AS (
    SELECT DISTINCT ON (item) item, chunk, score, bits, count(*) OVER (PARTITION BY item) AS matching
    FROM scored WHERE {chunks} ORDER BY item, score DESC, chunk
)
SELECT * FROM (
    SELECT item, chunk, score, matching, bits, count(*) OVER () AS total
    FROM best WHERE {items} ORDER BY score DESC FETCH FIRST %(want)s ROWS WITH TIES
) AS cut ORDER BY score DESC, chunk
"""


PER_TERM_SQL = """SELECT n, chunk, item, %(wt)s * sum(tf_title) + %(wb)s * sum(tf_body) AS f, max(dl) AS dl
    FROM hits GROUP BY n, chunk, item HAVING {fields}"""
"""A term's count in a chunk: the sum over the lexemes a prefix starts, or a phrase's hits."""
WORDS_ONLY_SQL = (
    """SELECT n, chunk, item, %(wt)s * tf_title + %(wb)s * tf_body AS f, dl FROM hits WHERE {fields}"""
)
"""The same when every term is one word: a word has one posting per chunk, nothing to sum."""


def rank_sql(
    params: dict[str, Any],
    chunks: str = "TRUE",
    items: str = "TRUE",
    columns: tuple[str, ...] | None = None,
    within: bool = False,
    candidates: str | None = None,
) -> str | None:
    """The ranking statement for the kinds of terms `params` has (None: no term matches), with a
    restriction's conditions on scored chunks and on items' best (`bm25.Restriction`); `within`:
    only the chunks of `params["within"]` are read; `candidates`: only the chunks this statement
    (`chunk` its first column) picks."""
    narrow = {"{blocks}": WITHIN_BLOCKS if within else "", "{within}": WITHIN_CHUNKS if within else ""}
    if candidates is not None:
        narrow = {"{blocks}": CANDIDATE_BLOCKS, "{within}": CANDIDATE_CHUNKS}
    parts = [
        _narrowed(sql, narrow)
        for sql, key in ((WORDS_PART, "words"), (PREFIXES_PART, "lows"), (PHRASES_PART, "phrase_ns"))
        if params[key]
    ]
    union = "\n    UNION ALL\n    ".join(parts)
    cols = columns or ("title", "body")
    words_only = parts == [WORDS_PART] and len(set(params["word_ns"])) == len(params["word_ns"])
    summed = "" if words_only else "sum"
    fields = " OR ".join(f"{summed}(tf_{c}) > 0" for c in ("title", "body") if c in cols) or "FALSE"
    per_term = (WORDS_ONLY_SQL if words_only else PER_TERM_SQL).format(fields=fields)
    picked = "" if candidates is None else CANDIDATES.format(candidates=candidates)
    format_ = {"parts": union, "chunks": chunks, "items": items, "per_term": per_term, "candidates": picked}
    return RANK_SQL.format(**format_) if parts else None


def _narrowed(sql: str, narrow: dict[str, str]) -> str:
    for key, value in narrow.items():
        sql = sql.replace(key, value)
    return sql
