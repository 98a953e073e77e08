"""bm25 of a large source in the PostgreSQL store under the plan FTS5 searches by (`lexical/plan.py`).

SQLite ranks a source larger than its memory copy's limit with FTS5 under a per-query plan: terms
in most chunks are left out, the rarest terms pick at most a few hundred candidate chunks (the
newest when even the rarest matches more) and every term that may score ranks those alone, a
single very common term is a sample of its newest chunks with one flat score, and a page the
candidates cannot fill is ranked again over every match. The plan is pure and shared; this is
its PostgreSQL side, so both stores search a large source the same way and give the same page:

- the plan's statistics are the source's counts (`stats.index_sizes`: one round trip, which
  also gives the ranking its counts: `bm25.Known`);
- candidates are the chunks of the plan's candidate terms (`NEWEST_SQL`; a word's newest
  chunks from its newest blocks alone), and the ranking reads only the blocks that hold them
  (`bm25.Restriction.within`);
- a sample's newest chunks are read once, and FTS5's batches (`plan.Sample`, as
  `lexical/fts._newest_items` reads them) are replayed over them, so the rows read, the items
  and their counts are the ones SQLite reads.

A search with source filters or a field limit is ranked over every match (`lexical.lexical_page`).
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from ....search.lexical.plan import Sample, estimated_df, plan_search
from ....search.query import TOP, ParsedQuery, Term
from ....search.request import NOTHING, Found, SearchContext
from ....search.scoring import norm
from ....search.stemming import stems
from ...store import Hit
from ..bm25 import Known, Restriction, rank
from ..phrases import NewestPhrase, phrase_hits
from ..pool import read_as
from ..postings.common_words import common_words
from ..prepared import prepared
from ..schema import on_postings
from . import rows as statements
from .memory import copied_up_to
from .page import Window, ordered, page_rows

if TYPE_CHECKING:
    from . import PgStore

NEWEST_WORD = """SELECT p.chunk, p.item FROM (
        SELECT chunks, items FROM (
            SELECT chunks, items, sum(n) OVER (ORDER BY last_chunk DESC) - n AS newer
            FROM {postings} WHERE source = %(source)s AND lexeme = %(lexeme)s) AS w
        WHERE newer < %(cap)s) AS b
    CROSS JOIN LATERAL unnest(b.chunks, b.items) AS p(chunk, item)"""
"""A word's newest `cap` chunks (and items) and a few more: its blocks hold disjoint chunk ranges,
so the newest blocks whose chunks add up to `cap` hold them."""
PREFIX_CHUNKS = """SELECT p.chunk, p.item FROM {postings} AS b
    CROSS JOIN LATERAL unnest(b.chunks, b.items) AS p(chunk, item)
    WHERE b.source = %(source)s AND b.lexeme >= %(low)s AND b.lexeme < %(high)s"""
NEWEST_PREFIX = """SELECT p.chunk, p.item FROM (
        SELECT chunks, items FROM (
            SELECT chunks, items, sum(n) OVER (PARTITION BY lexeme ORDER BY last_chunk DESC) - n AS newer
            FROM {postings} WHERE source = %(source)s AND lexeme >= %(low)s AND lexeme < %(high)s) AS w
        WHERE newer < %(cap)s) AS b
    CROSS JOIN LATERAL unnest(b.chunks, b.items) AS p(chunk, item)"""
"""A prefix's newest `cap` chunks are among each of its lexemes' newest `cap` (`NEWEST_WORD`)."""
WORD_CHUNKS = """SELECT p.chunk, p.item FROM {postings} AS b
    CROSS JOIN LATERAL unnest(b.chunks, b.items) AS p(chunk, item)
    WHERE b.source = %(source)s AND b.lexeme = %(lexeme)s"""
NEWEST_SQL = "SELECT DISTINCT chunk, item FROM ({parts}) AS u ORDER BY chunk DESC{limit}"
FLAT_PAGE_SQL = f"""WITH newest AS MATERIALIZED ({{newest}}),
    sample AS (SELECT item, max(chunk) AS chunk FROM newest GROUP BY item
        ORDER BY max(chunk) DESC LIMIT %(want)s),
    page AS (SELECT s.item, s.chunk, row_number() OVER (ORDER BY i.last_modified COLLATE "C" DESC, i.id) AS k
        FROM sample AS s JOIN pg_items AS i
        ON i.user_id = %(user)s AND i.source = %(source)s AND i.id = s.item)
SELECT CASE WHEN p.k IS NULL OR p.k = %(first)s THEN ARRAY(SELECT chunk FROM newest ORDER BY chunk DESC) END,
    CASE WHEN p.k IS NULL OR p.k = %(first)s THEN ARRAY(SELECT item FROM newest ORDER BY chunk DESC) END,
    {statements.ITEM_COLUMNS}, {statements.CHUNK_COLUMNS}
FROM (SELECT 1) AS one LEFT JOIN page AS p ON p.k >= %(first)s AND p.k <= %(last)s
    LEFT JOIN pg_items AS i ON i.user_id = %(user)s AND i.source = %(source)s AND i.id = p.item
    LEFT JOIN pg_chunks AS c ON c.user_id = %(user)s AND c.source = %(source)s AND c.id = p.chunk
ORDER BY p.k"""
"""A word's or prefix's unranked sample and its page in one round trip: the newest chunks (and
their items) FTS5's batches are replayed over, in the first row; the sample's items are the
first `want` met newest first, each with its newest chunk, and the page is theirs ordered as
`page.ordered` orders equal scores (newest, then item rowid), each row the item's and the
chunk's columns (`rows.HITS_SQL`)."""


async def planned_page(store: PgStore, ctx: SearchContext, query: ParsedQuery) -> Found | None:
    """The page of a relevance search without filters, as FTS5's plan ranks it on SQLite; None for
    a source small enough for the memory copy (SQLite ranks it exactly: so must the caller)."""
    request = ctx.request
    stats, known = await store.sizes(query)  # knowledge_search's, read a moment ago, or now
    if stats.chunks <= copied_up_to(store.pg):
        return None
    if known.generation is not None:  # the phrases' common words, at first use
        common_words(store.pg).read_ahead(store.pg, store.user_id, store.source, known.generation)
    df = estimated_df(query.terms, stats.df)
    plan = plan_search(query.terms, df, stats.chunks, ctx.depth)
    if plan is None:
        return NOTHING
    within = norm(df.values(), stats.chunks)
    read = plan.cap or 0
    if plan.flat_score is not None and plan.sample_items is not None:
        term, cap, want = plan.scored[0], plan.cap or 0, plan.sample_items
        if len(term.words) == 1:  # a word or a prefix: the sample and its page in one statement
            sample, rows = await _flat_sampled(store, ctx, term, cap, want, plan.flat_score)
        else:  # a phrase: read by windows
            sample = await _sample(store, term, cap, want, known)
            rows = await _flat_page(store, ctx, sample, plan.flat_score)
        read = sample.read
        if sample.complete:
            return Found(rows, int(rows[0]["total"]) if rows else 0, norm=within)
    else:
        candidates: list[int] | tuple[str, dict[str, Any]] | None = None
        if plan.candidate_terms is not None or plan.cap is not None:
            picking = plan.candidate_terms or plan.scored
            if all(len(t.words) == 1 for t in plan.scored):  # no phrase: picked in the ranking
                candidates = _newest_sql(store, picking, plan.cap)
            if candidates is None:
                candidates = await _newest(store, picking, plan.cap, known)
        rows = await _ranked(store, ctx, plan.scored, candidates, known)
    if len(rows) <= request.limit and plan.refill is not None:
        plan = plan.every_match()
        rows = await _ranked(store, ctx, plan.scored, None, known)
    note = plan.note(read)
    if note is not None:
        ctx.warnings.append(note)
    total = plan.total(int(rows[0]["total"]) if rows else 0, stats.items)
    return Found(rows, total, norm=within)


async def _ranked(
    store: PgStore,
    ctx: SearchContext,
    terms: tuple[Term, ...],
    within: list[int] | tuple[str, dict[str, Any]] | None,
    known: Known,
) -> list[Any]:
    """The page of `terms` ranked by bm25 (only the chunks `within`, when given: a list, or the
    statement that picks them and its parameters)."""
    if isinstance(within, tuple):
        only = Restriction(params=within[1], candidates=within[0])
    elif within is not None and not within:
        return []
    else:
        only = Restriction(within=None if within is None else tuple(within))
    weights, hits = ctx.source.weights, statements.RANKED_HITS_SQL
    query = ParsedQuery(terms)
    ranking = await rank(
        store.pg, store.source, store.user_id, query, ctx.depth + 1, weights, only, hits, known
    )
    if ranking is None or not len(ranking.ranked.item_rowids):
        return []
    rows = await page_rows(store, ranking.ranked, read=ranking.rows)
    return ordered(rows, False)[ctx.request.offset : ctx.depth + 1]


async def _newest(store: PgStore, terms: tuple[Term, ...], cap: int | None, known: Known) -> list[int]:
    """The chunks any of `terms` matches (the newest `cap` of them, when given)."""
    found = await _newest_rows(store, terms, cap, known)
    return [chunk for chunk, _ in found]


async def _newest_rows(
    store: PgStore, terms: tuple[Term, ...], cap: int | None, known: Known | None = None
) -> list[tuple[int, int]]:
    """(chunk, item) of the chunks any of `terms` matches, newest first (at most `cap`); a
    phrase's common words from memory when `known` gives the source's generation."""
    phrased: list[tuple[int, int]] = []
    phrases = [t for t in terms if len(t.words) > 1]
    if phrases:
        phrased = await _phrase_rows(store, phrases, cap, known)
    found: list[tuple[int, int]] = []
    newest = _newest_sql(store, terms, cap)
    if newest is not None:
        _, rows = await read_as(store.pg, store.user_id, *newest)
        found = [(int(c), int(i)) for c, i in rows]
    merged = sorted(set(found) | set(phrased), reverse=True)
    return merged[:cap] if cap else merged


def _newest_sql(
    store: PgStore, terms: tuple[Term, ...], cap: int | None
) -> tuple[str, dict[str, Any]] | None:
    """The statement of (chunk, item) of the chunks any word or prefix of `terms` matches, newest
    first (at most `cap`), and its parameters; None when `terms` has none (phrases are not read
    here)."""
    parts: list[str] = []
    params: dict[str, Any] = {"source": store.source, "cap": cap or 0}
    for n, term in enumerate(t for t in terms if len(t.words) == 1):
        stem = stems(term.words)[0]
        if term.prefix:
            params |= {f"low{n}": stem, f"high{n}": stem + TOP}
            sql = (NEWEST_PREFIX if cap else PREFIX_CHUNKS).replace("%(low)s", f"%(low{n})s")
            sql = sql.replace("%(high)s", f"%(high{n})s")
        else:
            params[f"lexeme{n}"] = stem
            sql = (NEWEST_WORD if cap else WORD_CHUNKS).replace("%(lexeme)s", f"%(lexeme{n})s")
        parts.append(f"({sql})")
    if not parts:
        return None
    limit = " LIMIT %(cap)s" if cap else ""
    sql = on_postings(NEWEST_SQL.format(parts=" UNION ALL ".join(parts), limit=limit), store.user_id)
    return sql, params


async def _phrase_rows(
    store: PgStore, phrases: list[Term], cap: int | None, known: Known | None
) -> list[tuple[int, int]]:
    """(chunk, item) of the chunks the phrases occur in: with `cap`, of the newest chunks of each
    phrase's rarest word, enough to hold its newest `cap` hits. With `known` (the plan's
    statistics), the words' counts are not read again and the common ones come from memory."""
    user, source = store.user_id, store.source
    kept = common_words(store.pg)
    docs, generation = (None, None) if known is None else (known.docs, known.generation)
    async with store.pg.connection() as conn:  # each statement sent with the user (`rows_as`)
        if cap and all(not t.prefix for t in phrases):
            newest = [NewestPhrase(user, source, t, docs, kept, generation) for t in phrases]
            hits = [(await phrase.at_least(conn, cap))[0] for phrase in newest]
        else:
            hits = await phrase_hits(conn, source, user, phrases, docs, kept, generation)
    return [(c[0], c[1]) for h in hits for c in h.chunks]


async def _newest_of(
    store: PgStore, term: Term, cap: int, enough: int, phrase: NewestPhrase | None, conn: Any
) -> tuple[list[tuple[int, int]], bool]:
    """(chunk, item) of `term`'s newest chunks, newest first: at most `cap`, at least `enough` when
    it has them; and whether they are all of them. A phrase's are read on by `phrase`, on `conn`
    (each statement sent with the user: `phrase_match.rows_as`)."""
    if phrase is None:
        rows = await _newest_rows(store, (term,), cap)
        return rows, len(rows) < cap
    hits, everything = await phrase.at_least(conn, enough)
    rows = sorted({(c[0], c[1]) for c in hits.chunks}, reverse=True)
    return rows[:cap], everything or len(rows) >= cap


async def _sample(store: PgStore, term: Term, cap: int, want: int, known: Known) -> Sample:
    """The newest chunks of `term` read as FTS5 reads them (`plan.Sample`), from its newest chunks
    read once. A phrase's newest hits are looked for in windows of its rarest word's chunks
    that go back until the batches are served, each window read once (its words' counts and the
    source's generation: `known`, read with the plan's statistics; its common words kept in
    memory: `postings/common_words.py`)."""
    whole_phrase = len(term.words) > 1 and not term.prefix
    phrase = None
    if whole_phrase:
        kept = common_words(store.pg)
        phrase = NewestPhrase(store.user_id, store.source, term, known.docs, kept, known.generation)
    enough = want
    async with AsyncExitStack() as held:
        conn = None
        if phrase is not None:  # one connection for all its windows
            conn = await held.enter_async_context(store.pg.connection())
        while True:
            newest, everything = await _newest_of(store, term, cap, enough, phrase, conn)
            sample = _replay(newest, everything, cap, want)
            if sample is not None:
                return sample
            enough *= 4


def _replay(newest: list[tuple[int, int]], everything: bool, cap: int, want: int) -> Sample | None:
    """FTS5's batches over `newest` (chunk, item), or None when they read past it and there is more."""
    sample = Sample(want, cap)
    while (asked := sample.next_batch()) is not None:
        rows = newest[sample.read : sample.read + asked]
        if len(rows) < asked and not everything:
            return None
        sample.take(rows, asked)
    return sample


async def _flat_sampled(
    store: PgStore, ctx: SearchContext, term: Term, cap: int, want: int, score: float
) -> tuple[Sample, list[Any]]:
    """The sample of a word or prefix (`_sample`) and its page (`_flat_page`), read in one round
    trip (`FLAT_PAGE_SQL`)."""
    newest = _newest_sql(store, (term,), cap)
    assert newest is not None  # a word or a prefix
    sql, params = newest
    depth = ctx.depth + 1
    page = {"user": store.user_id, "want": want, "first": ctx.request.offset + 1, "last": depth}
    flat = prepared(FLAT_PAGE_SQL.format(newest=sql))
    _, found = await read_as(store.pg, store.user_id, flat, params | page)
    chunks, items = found[0][0], found[0][1]
    sample = _replay(
        [(int(c), int(i)) for c, i in zip(chunks, items, strict=True)], len(chunks) < cap, cap, want
    )
    assert sample is not None  # every newest chunk up to the cap was read
    hits = statements.split([r[2:] for r in found if r[2] is not None])
    rows: list[Any] = []
    for _, chunk, n in sample.items.values():
        if chunk in hits:
            rows.append(Hit(*hits[chunk], score, n, len(sample.items)))
    return sample, ordered(rows, False)


async def _flat_page(store: PgStore, ctx: SearchContext, sample: Sample, score: float) -> list[Any]:
    """The sample's items as a page: each its newest chunk, all the same `score`."""
    window = Window([(item, chunk, score, n) for item, chunk, n in sample.items.values()])
    rows = await page_rows(store, window)
    return ordered(rows, False)[ctx.request.offset : ctx.depth + 1]
