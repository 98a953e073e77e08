"""Exact BM25 in plain SQL over the postings (`schema.py`): FTS5's ranking, in PostgreSQL.

The formula is FTS5's `bm25()` as `search/lexical/memory_index.py` reproduces it: k1 1.2, b 0.75,
term frequency = title weight × title count + body weight × body count, document length = the
chunk's tokens in both columns, avgdl = the source's tokens / chunks, idf = ln((N - n + 0.5) /
(n + 0.5)) clamped to 1e-6, and an OR query's score the sum over its terms. Only the query
terms' postings are read: one btree range each (a word, or a prefix as the range of lexemes it
starts; `lexeme` is COLLATE "C"), fed from small arrays; the plan is a nested loop of index
scans (check EXPLAIN: joining the postings to a CTE of the terms hash-joins the whole table).
A phrase is counted from its words' positions (`phrases.py`), and its hits join the sum. As
the memory copy, a term in more than half the chunks is left out of the score unless nothing
else matches (its idf is ~0: it only adds matches), and still told among matched terms. The cut
keeps every item tied with the last one kept (as the memory copy does), so the caller orders
equals as the SQLite page does (newest first).

Terms, stems, matched terms and the calibrated score's `Norm` are as the SQLite search has
them, so a result means the same whichever store ranked it.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from ...search.lexical.memory_index import Ranked
from ...search.query import ParsedQuery
from ...search.scoring import Norm, norm
from ...search.stemming import stems
from ..db import validate_user_id
from .phrases import PhraseHits, phrase_hits
from .pool import PgDatabase, Statement
from .postings import terms as term_plan
from .postings.common_words import common_words
from .postings.counting import in_columns, left_out_bits, term_rows
from .postings.ranking import rank_sql
from .postings.terms import TermPlan, norm_rows, plan, ranked
from .prepared import CUSTOM, prepared, sets_plan
from .schema import on_postings, partition_name

BEGIN_SQL = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
"""A ranking reads the statistics and the postings of one snapshot."""
SETUP_SQL = sets_plan(
    """SELECT set_config('knowledge.user_id', %s, true),
    set_config('max_parallel_workers_per_gather', '0', true),
    set_config('plan_cache_mode', 'force_custom_plan', true), to_regclass(%s) IS NOT NULL""",
    CUSTOM,
)
"""The user (`schema.as_user`), no parallel workers (one user's ranking reads a few index
ranges: workers would only add their start-up), the ranking's prepared statement planned with its
values (`prepared.py`), and whether the user has postings."""
SIZES_SQL = """SELECT (SELECT chunks FROM pg_corpus_stats WHERE user_id = %(user)s AND source = %(source)s),
    (SELECT tokens FROM pg_corpus_stats WHERE user_id = %(user)s AND source = %(source)s),
    ARRAY(SELECT lexeme FROM pg_term_docs WHERE user_id = %(user)s AND source = %(source)s
        AND lexeme = ANY(%(lexemes)s::text[]) ORDER BY lexeme),
    ARRAY(SELECT docs FROM pg_term_docs WHERE user_id = %(user)s AND source = %(source)s
        AND lexeme = ANY(%(lexemes)s::text[]) ORDER BY lexeme),
    (SELECT generation FROM pg_corpus_stats WHERE user_id = %(user)s AND source = %(source)s)"""
"""The source's chunks and tokens, the query words' chunk counts (those in any chunk) and the
source's generation (its phrases' common words are kept at one: `postings/common_words.py`)."""


@dataclass(frozen=True)
class Restriction:
    """What a ranking may return (a search's filters): SQL conditions with named parameters, on a
    scored chunk (`scored.chunk`, `scored.item`: before an item's best chunk is picked) and on an
    item's best (`best.item`: before the best `want` are cut)."""

    chunks: str = "TRUE"
    items: str = "TRUE"
    params: dict[str, Any] = field(default_factory=dict)
    columns: tuple[str, ...] | None = None
    """Match only in these of ("title", "body"), as FTS5's `{title} : (…)`: only their counts
    score, and a term's idf counts the chunks that have it there."""
    within: tuple[int, ...] | None = None
    """Score only these chunks (a plan's candidates, `store/planned.py`): read from the blocks
    whose chunk range reaches them; a term's idf still counts all its chunks."""
    candidates: str | None = None
    """As `within`, the chunks a statement picks (its first column `chunk`, its parameters in
    `params`), read in the ranking's own statement. Not with phrases (their hits are cut to
    `within` here)."""


EVERYTHING = Restriction()


@dataclass(frozen=True)
class Known:
    """What a ranking's first round trip reads, read already (`store/stats.index_sizes`): the
    source's chunks and tokens, its words' chunk counts, each prefix's (by its stem). Given, a
    query of words and prefixes is ranked in one round trip, from these counts (read just before,
    not in the ranking's snapshot: a write between the two moves a score by its share of N); a
    phrase's hits take a round trip of their own before it (`_rank_known`)."""

    chunks: int
    tokens: int
    docs: dict[str, int]
    prefixes: dict[str, int]
    generation: int | None = None
    """The source's generation these counts are of (None: no statistics row)."""


@dataclass(frozen=True)
class PgRanking:
    """A query's best items as `Ranked` (the shape the SQLite ranking returns), the query's
    `Norm` for calibrated scores, and the query's term texts (for `matched_terms`)."""

    ranked: Ranked
    norm: Norm
    term_texts: list[str]
    rows: list[tuple[Any, ...]] | None = None
    """With `rank(…, reading=…)`: the ranked rows with the columns `reading` adds after their six."""

    def matched_terms(self, chunk: int) -> list[str]:
        """The query terms (as the user wrote them) that this returned chunk matches."""
        return [self.term_texts[n] for n in self.ranked.terms_in([chunk])[chunk]]


async def rank(
    db: PgDatabase,
    source: str,
    user_id: str,
    query: ParsedQuery,
    want: int,
    weights: tuple[float, float],
    restriction: Restriction = EVERYTHING,
    reading: str | None = None,
    known: Known | None = None,
) -> PgRanking | None:
    """The best `want` items of `user_id`'s `source` for `query`, by exact BM25, of those
    `restriction` lets through; None when the query has no searchable term. `reading`: a
    statement around the ranking (`{ranking}`, its order kept) that reads more columns of each
    ranked row in the same round trip (the hits' rows), returned as `PgRanking.rows`."""
    if query.is_empty:
        return None
    user_id = validate_user_id(user_id)
    terms = plan(query)
    lexemes = sorted(
        {lexeme for _, lexeme in terms.words} | {s for _, t in terms.phrases for s in stems(t.words)}
    )
    async with db.connection() as conn:
        try:
            ranking = _Ranking(query, terms, lexemes, want, weights, restriction, reading)
            if known is not None and restriction.columns is None and known.chunks:
                return await _rank_known(db, conn, source, user_id, ranking, known)
            return await _rank(db, conn, source, user_id, ranking)
        except BaseException:
            with suppress(Exception):  # a broken connection: the pool discards it
                await conn.execute("ROLLBACK")
            raise


@dataclass(frozen=True)
class _Ranking:
    """What `rank` was asked."""

    query: ParsedQuery
    terms: TermPlan
    lexemes: list[str]
    want: int
    weights: tuple[float, float]
    restriction: Restriction
    reading: str | None


async def _rank(db: PgDatabase, conn: Any, source: str, user_id: str, asked: _Ranking) -> PgRanking:
    """`rank` on a borrowed connection: a snapshot opened with the user, the postings partition,
    the source's size and every query word's df in one round trip; the ranking (and what
    `reading` reads of it) and COMMIT in another (`PgDatabase.send`); prefixes, phrases and
    field limits read between them."""
    query, terms, lexemes, restriction = asked.query, asked.terms, asked.lexemes, asked.restriction
    sizes = {"user": user_id, "source": source, "lexemes": lexemes}
    begin = [(BEGIN_SQL, None), (SETUP_SQL, (user_id, partition_name("pg_posting_blocks", user_id)))]
    [_, (_, [(*_, has)]), (_, [stats])] = await db.send(conn, [*begin, (prepared(SIZES_SQL), sizes)])
    if not has:  # a user who never wrote
        await db.send(conn, [("COMMIT", None)])
        return PgRanking(
            ranked([], {}),
            norm([0 for _ in {t.fts() for t in query.terms}], 0),
            query.term_texts,
            [] if asked.reading else None,
        )
    chunks, tokens = int(stats[0] or 0), int(stats[1] or 0)
    docs = {str(lexeme): int(n) for lexeme, n in zip(stats[2], stats[3], strict=True)}
    rows = await term_rows(conn, source, user_id, terms, query, docs)
    generation = None if stats[4] is None else int(stats[4])
    hits = await _phrase_rows(db, conn, source, user_id, terms, rows, docs, generation)
    scoring, weights = await in_columns(
        conn, source, user_id, terms, hits, rows, asked.weights, restriction.columns
    )
    counted = _Counted(rows, scoring, weights, hits, chunks, tokens, docs)
    return await _ranking(db, conn, source, user_id, asked, counted, [])


async def _rank_known(
    db: PgDatabase, conn: Any, source: str, user_id: str, asked: _Ranking, known: Known
) -> PgRanking:
    """`_rank` from `known` counts: the phrases' hits read first (each statement sent with the
    user, `phrase_match.rows_as`: no snapshot opened for them), then the snapshot opened, the
    ranking and COMMIT in one round trip. Where `_rank` read the counts again in a snapshot of
    its own, and the hits and the ranking in it: one or two round trips more for a phrase (a
    write between the hits and the ranking drops a replaced chunk from the page, as between the
    counts and the ranking)."""
    terms = asked.terms
    rows = [0] * len(asked.query.terms)
    for n, lexeme in terms.words:
        rows[n] = known.docs.get(lexeme, 0)
    for n, prefix in terms.prefixes:
        rows[n] = known.prefixes.get(prefix, 0)
    hits = await _phrase_rows(db, conn, source, user_id, terms, rows, known.docs, known.generation)
    counted = _Counted(rows, rows, asked.weights, hits, known.chunks, known.tokens, known.docs)
    begin: list[Statement] = [
        (BEGIN_SQL, None),
        (SETUP_SQL, (user_id, partition_name("pg_posting_blocks", user_id))),
    ]
    return await _ranking(db, conn, source, user_id, asked, counted, begin)


async def _phrase_rows(
    db: PgDatabase,
    conn: Any,
    source: str,
    user_id: str,
    terms: TermPlan,
    rows: list[int],
    docs: dict[str, int],
    generation: int | None,
) -> list[PhraseHits]:
    """The phrases' hits (none read when the query has no phrase), each phrase's chunk count set
    in `rows`."""
    if not terms.phrases:
        return []
    phrases = [t for _, t in terms.phrases]
    hits = await phrase_hits(conn, source, user_id, phrases, docs, common_words(db), generation)
    for (n, _), phrase in zip(terms.phrases, hits, strict=True):
        rows[n] = len(phrase.chunks)
    return hits


@dataclass(frozen=True)
class _Counted:
    """What a ranking statement is built from: each term's chunk count (`rows`), the counts idf
    is computed from and the column weights (a field limit changes both), the phrases' hits, the
    source's chunks and tokens, its words' chunk counts."""

    rows: list[int]
    scoring: list[int]
    weights: tuple[float, float]
    hits: list[PhraseHits]
    chunks: int
    tokens: int
    docs: dict[str, int]


async def _ranking(
    db: PgDatabase,
    conn: Any,
    source: str,
    user_id: str,
    asked: _Ranking,
    counted: _Counted,
    begin: list[Statement],
) -> PgRanking:
    """The ranking statement from `counted`, sent after `begin` (the snapshot's start, when not
    opened yet) and with COMMIT, unless a term in most chunks matched unscored (rare). Sent with
    `begin`, it is the transaction's one statement: its implicit transaction (the batch) is enough."""
    query, terms, restriction, rows = asked.query, asked.terms, asked.restriction, counted.rows
    kept = term_plan.kept(rows, counted.chunks)
    within = restriction.within
    hits = counted.hits if within is None else [_only(h, set(within)) for h in counted.hits]
    params = term_plan.params(
        source,
        user_id,
        terms,
        hits,
        kept,
        counted.scoring,
        counted.chunks,
        counted.tokens,
        counted.weights,
        asked.want,
    )
    params |= restriction.params | _within(restriction)
    sql = rank_sql(
        params,
        restriction.chunks,
        restriction.items,
        restriction.columns,
        within is not None,
        restriction.candidates,
    )
    left_out = [n for n in range(len(rows)) if rows[n] and n not in kept]
    if sql and asked.reading:
        sql = asked.reading.replace("{ranking}", sql)
    generic = _generic(params, restriction)
    marked = prepared(on_postings(sql, user_id), custom=not generic, typed=generic) if sql else ""
    ranking = [(marked, params)] if sql else []
    held = bool(left_out and sql)  # the snapshot stays open: the left-out terms' bits are read in it
    closing: list[Statement] = [] if held else [("COMMIT", None)]
    if begin and not held:  # one statement, one snapshot: sent with its setup, without BEGIN … COMMIT
        begin, closing = [b for b in begin if b[0] != BEGIN_SQL], []
    results = await db.send(conn, begin + ranking + closing)
    found = results[len(begin)][1] if sql else []
    extra: dict[int, int] = {}
    if left_out and sql:
        found_chunks = [r[1] for r in found]
        extra = await left_out_bits(conn, source, user_id, terms, counted.hits, left_out, found_chunks)
        await db.send(conn, [("COMMIT", None)])
    distinct = {t.fts(): norm_rows(t, rows[n], counted.docs) for n, t in enumerate(query.terms)}
    read = list(found) if asked.reading else None
    return PgRanking(ranked(found, extra), norm(distinct.values(), counted.chunks), query.term_texts, read)


def _generic(params: dict[str, Any], restriction: Restriction) -> bool:
    """Whether a ranking is run from a generic plan (`prepared.py`): one of words and prefixes
    (their candidates picked by words and prefixes too) without a search's filters; a phrase's
    hits, a list of chunks, a field limit or a filter keep a plan made with their values."""
    if params["phrase_ns"] or restriction.within is not None or restriction.columns is not None:
        return False
    return restriction.chunks == "TRUE" and restriction.items == "TRUE"


def _within(restriction: Restriction) -> dict[str, Any]:
    """The parameters of `Restriction.within`: its chunks and their range."""
    within = restriction.within
    if within is None:
        return {}
    return {"within": list(within), "within_lo": min(within, default=0), "within_hi": max(within, default=0)}


def _only(hits: PhraseHits, chunks: set[int]) -> PhraseHits:
    """A phrase's hits in `chunks` alone."""
    return PhraseHits([c for c in hits.chunks if c[0] in chunks])
