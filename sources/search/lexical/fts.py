"""Retrieve from FTS5 under a per-query plan (`plan.py`): any source, any option.

The plan says which terms find candidates and which only score them, when a very common term
is sampled newest first instead of ranked, and when the candidates ran out and every match
must be scored. Prefixes of a large source become the OR of their index terms when the
source's vocabulary (`vocabulary.py`) is current.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...storage.db import Database
from ..query import ParsedQuery, Term
from ..request import NOTHING, Found, SearchContext
from ..scoring import norm
from .memory import memory_indexes, ranked_page
from .plan import Sample, estimate_keys, estimated_df, plan_search
from .sql import SearchSpec, build_sample_sql, build_search_sql
from .term_stats import IndexStats, term_stats
from .vocabulary import Vocabulary


class FtsRetriever:
    """The page from FTS5 under a `plan_search` plan; always answers."""

    async def retrieve(self, db: Database, ctx: SearchContext, query: ParsedQuery) -> Found:
        indexes = memory_indexes(db, ctx.source)
        vocabulary = indexes.terms() if any(t.prefix for t in query.terms) else None
        noted: list[str] = []
        found = await _planned(db, ctx, query, noted, vocabulary, ctx.request.index_stats)
        if vocabulary is not None and not indexes.still(vocabulary):
            # A commit since the vocabulary was read may have added a term a prefix matches.
            noted = []
            found = await _planned(db, ctx, query, noted, None)  # counted again: a commit came
        ctx.warnings += noted
        return found


async def _planned(
    db: Database,
    ctx: SearchContext,
    query: ParsedQuery,
    warnings: list[str],
    vocabulary: Vocabulary | None,
    given: IndexStats | None = None,
) -> Found:
    """The page under the plan for `query`; `given`: its terms' counts read a moment ago
    (knowledge_search's, `SearchRequest.index_stats`), used when they count every term (the
    glossary may have added some) instead of a trip to the database for what it has cached."""
    request = ctx.request
    same_rows = expansions(query.terms, vocabulary) if vocabulary is not None else {}
    keys = [k for t in query.terms for k in estimate_keys(t)]
    if given is not None and all(k in given.df for k in keys):
        stats = given
    else:
        stats = await term_stats(db, ctx.source.name).lookup(db, keys, same_rows)
    plan = plan_search(query.terms, estimated_df(query.terms, stats.df), stats.chunks, ctx.depth, same_rows)
    if plan is None:
        return NOTHING
    if ctx.order_by != "relevance" and not plan.exact:
        # Newest first over every match: candidates picked by relevance would skew it.
        plan = plan.every_match()
    spec = SearchSpec(
        table=ctx.source.name,
        match=plan.match,
        limit=request.limit,
        offset=request.offset,
        order_by=ctx.order_by,
        weights=ctx.source.weights,
        filters=tuple(request.filters),
        columns=request.columns,
        candidates=plan.candidates,
        cap=plan.cap,
        flat_score=plan.flat_score,
    )
    read = plan.cap
    if plan.flat_score is not None and plan.sample_items is not None:
        rows, read, complete = await _newest_items(db, ctx, spec, plan.flat_score, plan.sample_items)
        if complete:
            # The sample holds every matching row: it is the whole answer, newest first.
            # Scoring it by bm25 would read every row again (FTS5 counts a term's rows for
            # its idf by reading them): a sparse phrase of common words paid twice.
            within = norm(estimated_df(query.terms, stats.df).values(), stats.chunks)
            return Found(rows, int(rows[0]["total"]) if rows else 0, norm=within)
    else:
        rows = await db.fetchall(*build_search_sql(spec))
    if len(rows) <= request.limit and plan.refill is not None:
        # The candidates ran out before the page filled: score every match instead.
        plan = plan.every_match()
        spec = replace(spec, match=plan.match, candidates=None, cap=None, flat_score=None)
        rows = await db.fetchall(*build_search_sql(spec))
    note = plan.note(read or 0)
    if note is not None:
        warnings.append(note)
    total = plan.total(int(rows[0]["total"]) if rows else 0, stats.items)
    return Found(rows, total, norm=norm(estimated_df(query.terms, stats.df).values(), stats.chunks))


async def _newest_items(
    db: Database, ctx: SearchContext, spec: SearchSpec, score: float, want: int
) -> tuple[list[Any], int, bool]:
    """An unranked sample's page: the newest matching chunks (at most `spec.cap`), read until
    they name `want` items, each item with its newest chunk and all `score`. Also how many rows
    were read, and whether they are every match.

    FTS5 hands rows back as they are read, so a phrase of common words found in most of its
    rows stops after a few dozen, not after `spec.cap` (a chat's many messages, a document's
    many chunks would otherwise fill the cap with a handful of items). Rows are read in growing
    batches, each after the last rowid seen; the first is usually enough."""
    cap = spec.cap
    assert cap is not None  # an unranked plan is a sample: always capped
    sample, before = Sample(want, cap), None
    while (asked := sample.next_batch()) is not None:
        rows = await db.fetchall(*build_sample_sql(spec, asked, before))
        sample.take([(chunk, item) for chunk, item in rows], asked)
        before = rows[-1][0] if rows else before
    indexes = memory_indexes(db, ctx.source)
    found = [(item, chunk, score, n) for item, chunk, n in sample.items.values()]
    page = await ranked_page(indexes, spec, found)
    return page, sample.read, sample.complete


def expansions(terms: tuple[Term, ...], vocabulary: Vocabulary) -> dict[str, str]:
    """The prefixes among `terms` (by `Term.fts()`) that `vocabulary` can match as an OR of
    their index terms."""
    expanded: dict[str, str] = {}
    for term in terms:
        if term.prefix and len(term.words) == 1:
            expansion = vocabulary.expansion(term.words[0])
            if expansion is not None:
                expanded[term.fts()] = expansion
    return expanded
