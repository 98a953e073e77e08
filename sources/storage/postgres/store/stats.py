"""A source's term statistics in the PostgreSQL item store, as `knowledge_search` weighs sources.

`index_stats` is `PgStore.index_stats`: the source's chunk and
item counts and each FTS term expression's number of chunks (a word's from `pg_term_docs`, a
prefix's as the chunks of the lexemes it starts), so `SharedStats` puts PostgreSQL's bm25 on the
scale of all the user's sources exactly as it does SQLite's. A multi-word prefix phrase
("home serv*") is estimated by its rarest word. The sources of one `knowledge_search` are one
database: their statistics are read in one round trip (`joint_sizes`). A prefix's count is kept
until its source's generation moves (a common prefix's is the costliest part of the statement);
a source copied in memory (`memory.py`) counts its prefixes there, at the copy's generation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
from cachetools import LRUCache

from ....search.lexical.plan import estimate_keys
from ....search.lexical.term_stats import IndexStats
from ....search.query import TOP, ParsedQuery, Term
from ....search.stemming import stems
from ..bm25 import Known
from ..pool import PgDatabase, reads_as, saw_generation
from ..prepared import prepared
from .memory import CACHE as COPIES
from .memory import MemoryCopies

STATS_SQL = """SELECT (SELECT chunks FROM pg_corpus_stats WHERE user_id = %(user)s AND source = %(source)s),
    (SELECT tokens FROM pg_corpus_stats WHERE user_id = %(user)s AND source = %(source)s),
    (SELECT generation FROM pg_corpus_stats WHERE user_id = %(user)s AND source = %(source)s),
    CASE WHEN (SELECT generation FROM pg_corpus_stats WHERE user_id = %(user)s AND source = %(source)s)
        IS DISTINCT FROM %(counted_at)s::bigint
        THEN (SELECT count(*) FROM pg_items WHERE user_id = %(user)s AND source = %(source)s) END,
    ARRAY(SELECT lexeme FROM pg_term_docs WHERE user_id = %(user)s AND source = %(source)s
        AND lexeme = ANY(%(lexemes)s::text[]) ORDER BY lexeme),
    ARRAY(SELECT docs FROM pg_term_docs WHERE user_id = %(user)s AND source = %(source)s
        AND lexeme = ANY(%(lexemes)s::text[]) ORDER BY lexeme),
    CASE WHEN %(prefixes_at)s::bigint IS NULL
        OR (SELECT generation FROM pg_corpus_stats WHERE user_id = %(user)s AND source = %(source)s)
        IS DISTINCT FROM %(prefixes_at)s::bigint
        THEN ARRAY(SELECT (SELECT count(DISTINCT c.chunk)
            FROM pg_posting_blocks b CROSS JOIN LATERAL unnest(b.chunks) AS c(chunk)
            WHERE b.user_id = %(user)s AND b.source = %(source)s AND b.lexeme >= q.low AND b.lexeme < q.high)
        FROM unnest(%(lows)s::text[], %(highs)s::text[]) WITH ORDINALITY AS q(low, high, k)
        ORDER BY q.k) END"""
"""One round trip: the source's chunk count, tokens and generation, its item count (unless counted
at that generation already: counting thousands of items is most of a rare word's statistics), its
words and their chunk counts, and each prefix's chunks (the lexemes in [low, low + TOP)), in the
order of `lows` (unless every one was counted at that generation, `prefixes_at`: a common
prefix's count sorts every posting of every lexeme it starts)."""
COUNTED = 10_000
"""Sources whose item count is kept (a few dozen bytes each)."""
JOINT = "joint_stats"
"""`PgDatabase.caches` key: the joint reads of several sources' statistics under way (`joint_sizes`)."""
ITEMS_CACHE = "item_counts"
"""`PgDatabase.caches` key: each (user, source)'s item count and the generation it was counted at."""
PREFIXES_CACHE = "prefix_counts"
"""`PgDatabase.caches` key: each (user, source, prefix)'s chunk count and the generation it was
counted at (as SQLite's `TermStats` keeps a term's count until the index changes)."""
PREFIXES_COUNTED = 20_000
"""Prefixes whose chunk count is kept."""


async def index_stats(pg: PgDatabase, user_id: str, source: str, query: ParsedQuery) -> IndexStats:
    """`user_id`'s `source`'s chunk and item counts and the chunk counts of `query`'s term keys
    (`plan.estimate_keys`)."""
    return (await index_sizes(pg, user_id, source, query))[0]


async def index_sizes(
    pg: PgDatabase, user_id: str, source: str, query: ParsedQuery
) -> tuple[IndexStats, Known]:
    """`index_stats`, and what `bm25.rank` reads first (the source's tokens, its words' and
    prefixes' chunk counts), from the same round trip."""
    return (await sources_sizes(pg, user_id, [source], query))[0]


async def sources_sizes(
    pg: PgDatabase, user_id: str, sources: Sequence[str], query: ParsedQuery
) -> list[tuple[IndexStats, Known]]:
    """`index_sizes` of each of `sources`, in their order: `STATS_SQL` once per source, the
    statements sent together in one round trip (`PgDatabase.send`), the user set once for them."""
    asked = _Asked(pg, query)
    sent = [(prepared(STATS_SQL), asked.params(user_id, source)) for source in sources]
    results = await reads_as(pg, user_id, sent)  # one row each: four numbers, three arrays
    return [asked.sizes(user_id, source, rows[0]) for source, (_, rows) in zip(sources, results, strict=True)]


class _Joint:
    """One read of several sources' statistics, which each of them takes its own from."""

    def __init__(self, sources: Sequence[str]) -> None:
        self.sources = sources
        self.read: dict[str, tuple[IndexStats, Known]] | None = None
        self.done = anyio.Event()


async def joint_sizes(
    pg: PgDatabase, user_id: str, source: str, query: ParsedQuery, together: Sequence[str]
) -> tuple[IndexStats, Known]:
    """`index_sizes` of `source`, read with those of every source in `together` that asks for
    the same query at this moment (knowledge_search's fan-out: its sources are one database):
    the first to ask reads them all in one round trip (`sources_sizes`), those asking while it
    is under way take their own from it. A source not in `together`, or asking after the read
    (or when it failed: its asker says why), reads its own."""
    if source not in together:
        return await index_sizes(pg, user_id, source, query)
    reading: dict[tuple[str, tuple[Term, ...], tuple[str, ...]], _Joint] = pg.caches.setdefault(JOINT, {})
    key = (user_id, query.terms, tuple(together))
    joint = reading.get(key)
    if joint is not None:
        await joint.done.wait()
        if joint.read is None:
            return await index_sizes(pg, user_id, source, query)
        return joint.read[source]
    joint = reading[key] = _Joint(tuple(dict.fromkeys(together)))
    try:
        joint.read = dict(
            zip(joint.sources, await sources_sizes(pg, user_id, joint.sources, query), strict=True)
        )
    finally:
        del reading[key]
        joint.done.set()
    return joint.read[source]


class _Asked:
    """What `STATS_SQL` asks of every source for one query (its words, its prefixes' ranges, the
    item counts known), and each source's statistics from its row."""

    def __init__(self, pg: PgDatabase, query: ParsedQuery) -> None:
        self.pg = pg
        self.wanted = wanted = {key: term for t in query.terms for key, term in _keyed(t)}
        self.words = sorted(
            {s for t in wanted.values() if not (t.prefix and len(t.words) == 1) for s in stems(t.words)}
        )
        self.prefixes = {
            key: stems(t.words)[0] for key, t in wanted.items() if t.prefix and len(t.words) == 1
        }
        self.lows = list(self.prefixes.values())
        self.highs = [low + TOP for low in self.lows]
        self.counted: LRUCache[tuple[str, str], tuple[int, int]] = pg.caches.setdefault(
            ITEMS_CACHE, LRUCache(COUNTED)
        )
        self.by_prefix: LRUCache[tuple[str, str, str], tuple[int, int]] = pg.caches.setdefault(
            PREFIXES_CACHE, LRUCache(PREFIXES_COUNTED)
        )
        self.kept: dict[str, list[int]] = {}
        """Each source's prefix counts when all were kept at one generation (`params`)."""

    def params(self, user_id: str, source: str) -> dict[str, Any]:
        """`STATS_SQL`'s parameters for `source`."""
        self._from_copy(user_id, source)
        at, _ = self.counted.get((user_id, source), (None, 0))
        kept = [self.by_prefix.get((user_id, source, low)) for low in self.lows]
        at_once = {k[0] if k is not None else None for k in kept}
        prefixes_at = at_once.pop() if len(at_once) == 1 else None
        if prefixes_at is not None:  # as they are now: another source's read may drop them meanwhile
            self.kept[source] = [n for _, n in filter(None, kept)]
        return {
            "prefixes_at": prefixes_at,
            "user": user_id,
            "source": source,
            "lexemes": self.words,
            "lows": self.lows,
            "highs": self.highs,
            "counted_at": at,
        }

    def _from_copy(self, user_id: str, source: str) -> None:
        """Keep the prefixes' chunk counts of `source`'s copy in memory (`memory.py`), when it has
        one, at the copy's generation: the same counts the statement makes from the postings,
        which it then skips while the source is at that generation (`prefixes_at`)."""
        copies: MemoryCopies | None = self.pg.caches.get(COPIES)
        copy = None if copies is None or not self.lows else copies.copies.get((user_id, source))
        if copy is None:
            return
        for low in self.lows:
            kept = self.by_prefix.get((user_id, source, low))
            if kept is None or kept[0] < copy.generation:
                self.by_prefix[(user_id, source, low)] = (copy.generation, copy.prefix_chunks(low))

    def sizes(self, user_id: str, source: str, row: Sequence[Any]) -> tuple[IndexStats, Known]:
        """`source`'s statistics from its `STATS_SQL` row (its item count kept, its generation noted)."""
        pg, wanted, prefixes = self.pg, self.wanted, self.prefixes
        _, count = self.counted.get((user_id, source), (None, 0))
        chunks, tokens, generation = int(row[0] or 0), int(row[1] or 0), row[2]
        if row[3] is not None:
            count = int(row[3])
            if generation is not None:
                self.counted[(user_id, source)] = (int(generation), count)
        docs = {str(lexeme): int(n) for lexeme, n in zip(row[4], row[5], strict=True)}
        if row[6] is None:  # every prefix counted at this generation
            by_prefix = dict(zip(self.lows, self.kept[source], strict=True))
        else:
            by_prefix = {low: int(n) for low, n in zip(self.lows, row[6], strict=True)}
            if generation is not None:
                for low, n in by_prefix.items():
                    self.by_prefix[(user_id, source, low)] = (int(generation), n)
        df: dict[str, int] = {}
        for key, term in wanted.items():
            if key in prefixes:
                df[key] = by_prefix[prefixes[key]]
            elif len(term.words) == 1:
                df[key] = docs.get(stems(term.words)[0], 0)
            else:  # a multi-word prefix phrase: its rarest word
                df[key] = min(docs.get(s, 0) for s in stems(term.words)) if term.words else 0
        at = None if generation is None else int(generation)
        saw_generation(pg, user_id, source, at)
        return IndexStats(chunks, count, df), Known(chunks, tokens, docs, by_prefix, at)


def _keyed(term: Term) -> list[tuple[str, Term]]:
    """Each key of `term` (`plan.estimate_keys`) with the term that key counts."""
    if len(term.words) > 1 and not term.prefix:
        return [(Term((w,)).fts(), Term((w,))) for w in term.words]
    return [(key, term) for key in estimate_keys(term)]
