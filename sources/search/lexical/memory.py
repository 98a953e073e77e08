"""Retrieve from a small source's exact in-memory copy of its FTS5 index (`memory_index`).

The copy ranks a query of plain words and prefixes itself; phrases are scored by FTS5 one by
one (their exact share of the OR query's bm25) and added in. It answers only what it ranks
exactly as FTS5 would: relevance order, every column, no chunk filters, a current copy.
Otherwise it returns None and `fts.FtsRetriever` answers.
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_left
from typing import Any

import numpy as np

from ...storage.db import Database
from ..query import TOP, ParsedQuery, Term, parse_query
from ..request import NOTHING, Found, SearchContext, SearchedSource
from ..scoring import norm
from ..stemming import stems
from .memory_index import K1, B, Floats, Hits, MemoryIndex, MemoryIndexes, QueryTerm, Ranked
from .plan import CANDIDATE_CAP, PER_RESULT
from .sql import RankedRow, SearchSpec, build_ranked_sql, build_term_scores_sql, ident

SYNC_PAGE_ITEMS = 100
"""A ranked page of at most this many candidate items is read on the event loop's thread."""


STRUCTURE_SQL = (
    "SELECT (SELECT block FROM {p}_chunks_fts_data WHERE id = 10), (SELECT count(*) FROM {p}_items)"
)
"""FTS5's structure record (rowid 10 of its `_data` table: rewritten by every change to the
index, and only by those), and how many items there are (one deleted without its chunks)."""


class ChunkIndexes(MemoryIndexes):
    """`MemoryIndexes` whose version moves only when the chunks' FTS5 index changes: the
    background embedding worker commits a batch of vectors every second or two, which moves
    `PRAGMA data_version` but not the index, and must not send searches back to FTS5."""

    def __init__(self, db: Database, table: str, weights: tuple[float, float]) -> None:
        super().__init__(db, table, weights)
        self._seen: int | None = None
        self._structure: tuple[Any, ...] | None = None
        self._stamp = 0

    def data_version(self) -> int | None:
        """`PRAGMA data_version`: moves with every commit of another connection."""
        return super().version()

    def version(self) -> int | None:
        seen = super().version()
        if seen is None:
            return None
        if seen != self._seen:
            self._seen = seen
            structure = self._structure_record()
            if structure is None or structure != self._structure:
                self._structure = structure
                self._stamp += 1
        return self._stamp

    def _structure_record(self) -> tuple[Any, ...] | None:
        try:
            return tuple(self.read_here(STRUCTURE_SQL.format(p=ident(self.table)), [])[0])
        except sqlite3.Error:  # no such table: every commit counts, as `data_version` does
            return None


def memory_indexes(db: Database, source: SearchedSource) -> ChunkIndexes:
    """The source's in-memory copy of `db`'s index (see `memory_index`), made on first use."""
    indexes = db.caches.get("memory_index")
    if indexes is None:
        indexes = db.caches["memory_index"] = ChunkIndexes(db, source.name, source.weights)
    return indexes  # type: ignore[no-any-return]


class MemoryRetriever:
    """The page from the source's current memory copy, exact; None when FTS5 must answer."""

    async def retrieve(self, db: Database, ctx: SearchContext, query: ParsedQuery) -> Found | None:
        request = ctx.request
        if (
            ctx.order_by != "relevance"
            or request.columns is not None
            or any(f.on_chunk for f in request.filters)
        ):
            return None
        indexes = memory_indexes(db, ctx.source)
        index = indexes.current()
        if index is None:
            return None
        if not index.chunks:  # an empty source (most users have some): nothing to rank or read
            return NOTHING
        want = max(CANDIDATE_CAP, PER_RESULT * ctx.depth) if request.filters else ctx.depth + 1
        terms = await query_terms(db, ctx.source, query, index)
        ranked = index.rank(terms, want)
        if ranked.total == 0:
            return NOTHING if indexes.still(index) else None
        filters = tuple(request.filters)
        spec = SearchSpec(
            ctx.source.name, match="", limit=request.limit, offset=request.offset, filters=filters
        )
        rows = await ranked_page(indexes, spec, ranked.rows())
        everything = len(ranked.item_rowids) == ranked.total
        if len(rows) <= request.limit and not everything:
            # The item filters left the page short: rank every match.
            ranked = index.rank(terms, ranked.total)
            rows = await ranked_page(indexes, spec, ranked.rows())
        if not indexes.still(index):
            return None  # the database changed under the copy (a new one is being made)
        # With item filters, the total is of the items passed to SQL (all of them, or the best).
        total = (int(rows[0]["total"]) if rows else 0) if request.filters else ranked.total
        texts = query.term_texts
        matched = ranked.terms_in([r["chunk_rowid"] for r in rows])
        distinct = {t.fts(): _rows(index, t, q) for t, q in zip(query.terms, terms, strict=True)}
        within = norm(distinct.values(), index.chunks)
        return Found(rows, total, lambda rowid: [texts[n] for n in matched[rowid]], norm=within)


async def rank_in_memory(db: Database, source: SearchedSource, query: str, want: int = 10) -> Ranked | None:
    """Only the ranking step of a search from the memory copy (no page read, no snippets): the
    best `want` items' rowids and bm25, or None without a current copy. For `eval`, to compare
    with an in-memory BM25 library."""
    index = memory_indexes(db, source).current()
    parsed = parse_query(query)
    if index is None or parsed.is_empty:
        return None
    return index.rank(await query_terms(db, source, parsed, index), want)


async def query_terms(
    db: Database, source: SearchedSource, query: ParsedQuery, index: MemoryIndex
) -> list[QueryTerm]:
    """The query's terms as the memory copy ranks them: a word as its index term, a prefix as
    its rows scored by the copy (`prefix_hits`), a phrase (or a prefix the copy cannot
    score) as its rows scored by FTS5 (`_scored_alone`).

    FTS5 took milliseconds to score a prefix of a few thousand chunks (it merges the doclists of
    every term the prefix matches, then reads each row's instances); in knowledge_search those
    ran beside the large sources' statements on the same two cores (`docs/performance.md`,
    "Session 15: a small source's prefixes from its copy")."""
    words = stems(t.words[0] for t in query.terms)
    mine: dict[int, QueryTerm] = {}
    for n, t in enumerate(query.terms):
        if _plain(t):
            mine[n] = words[n]
        elif _copied_prefix(t):
            hits = prefix_hits(index, words[n])
            if hits is not None:
                mine[n] = hits
    alone = [t for n, t in enumerate(query.terms) if n not in mine]
    scored = iter(await _scored_alone(db, source, alone) if alone else [])
    return [mine[n] if n in mine else next(scored) for n in range(len(query.terms))]


async def ranked_page(indexes: MemoryIndexes, spec: SearchSpec, ranked: list[RankedRow]) -> list[Any]:
    """The page of items ranked here: a small one read on the loop's thread (`read_here`)."""
    sql, params = build_ranked_sql(spec, ranked)
    if len(ranked) <= SYNC_PAGE_ITEMS and indexes.can_read_here():
        return indexes.read_here(sql, params)
    return await indexes.db.fetchall(sql, params)


async def _scored_alone(db: Database, source: SearchedSource, terms: list[Term]) -> list[Hits]:
    """Phrases and prefixes need word positions the memory copy lacks: FTS5 scores each alone
    (its exact share of the OR query's bm25), all in one statement."""
    sql, params = build_term_scores_sql(source.name, source.weights, [t.fts() for t in terms])
    if any(t.prefix for t in terms):
        rows = await db.fetchall(sql, params)
    else:  # a phrase reads at most its words' rows (of a small source): here, not a thread
        rows = memory_indexes(db, source).read_here(sql, params)
    by_term: list[list[Any]] = [[] for _ in terms]
    for n, rowid, bm25 in rows:
        by_term[n].append((rowid, bm25))
    return [
        (np.array([r for r, _ in mine], dtype=np.int64), np.array([b for _, b in mine], dtype=np.float64))
        for mine in by_term
    ]


def prefix_hits(index: MemoryIndex, stem: str) -> Hits | None:
    """The chunks holding an index term that starts with `stem` (a prefix as the tokenizer
    reads it), and the prefix's bm25 there (negative), exactly as FTS5's `bm25()` of the
    prefix alone: its terms' weighted counts summed per chunk (whole numbers: in any order),
    then saturated once with the same operations in the same order, its idf counting the
    chunks holding any of them. None without the counts (`counts_of`)."""
    counts = index.counts
    if counts is None:
        return None
    low, high = bisect_left(counts.names, stem), bisect_left(counts.names, stem + TOP)
    start, end = index.bounds[low], index.bounds[high]
    summed = np.bincount(index.positions[start:end], weights=counts.freqs[start:end], minlength=index.chunks)
    hit = np.flatnonzero(summed)
    f, dl = summed[hit], counts.length[hit]
    k = K1 * (1.0 - B + B * dl / counts.avgdl) if counts.avgdl else 0.0
    bm25: Floats = -(index.idf(len(hit)) * (f * (K1 + 1.0) / (f + k)))
    return index.rowids[hit], bm25


def _rows(index: MemoryIndex, term: Term, ranked: QueryTerm) -> int:
    """A term's row count as FTS5's planner estimates it (`plan.estimated_df`: a phrase counts
    its rarest word's rows), so both retrievers give the same norm."""
    if len(term.words) > 1 and not term.prefix:
        return min(index.rows_of(word) for word in stems(term.words))
    return index.rows_of(ranked)


def counted_terms(index: MemoryIndex, terms: tuple[Term, ...]) -> dict[str, QueryTerm] | None:
    """What the copy counts for each of `terms`' row-count keys (`plan.estimate_keys`, by FTS
    expression): a word (a phrase's words each) as its index term, a prefix as its rows
    (`prefix_hits`: the rows FTS5's probe of the prefix reads, without merging its
    terms' doclists on the loop's thread). None when a prefix is left to FTS5."""
    words = [w for t in terms if not t.prefix for w in t.words]
    counted: dict[str, QueryTerm] = dict(zip((Term((w,)).fts() for w in words), stems(words), strict=True))
    for t in terms:
        if t.prefix:
            hits = prefix_hits(index, stems(t.words)[0]) if _copied_prefix(t) else None
            if hits is None:
                return None
            counted[t.fts()] = hits
    return counted


def _copied_prefix(term: Term) -> bool:
    """A prefix the copy can score: one word FTS5 tokenizes as `stems` does (as `vocabulary`)."""
    word = term.words[0]
    return term.prefix and len(term.words) == 1 and word.isascii() and word.isalnum()


def _plain(term: Term) -> bool:
    """A single word (not a phrase or prefix): the memory copy scores it by itself."""
    return len(term.words) == 1 and not term.prefix
