"""The `ChunkedSource` every source builds on: search and get over items split into chunks.

A source declares its name, id field, result model, migrations and file parser, and adds its
own filters and type-aware fields; searching, ranking, snippets, matched terms, pagination
and the retrieval modes are shared here.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Generic

import aiosqlite
import numpy as np
from pydantic import BaseModel, ConfigDict

from .db import Database, Migration
from .errors import InvalidArgumentError, NotFoundError
from .importing import ParsedItem
from .memory_index import Hits, MemoryIndexes, QueryTerm, Ranked
from .models import GetResponse, Loc, NextStep, OrderBy, R, ResultItem, Retrieval, SearchResponse, SourceName
from .query import ParsedQuery, Term, parse_query
from .retrieval import Budget, Defaults, Span, chunk_window, estimate_tokens, full_window, resolve_budget
from .scoring import calibrated
from .search_plan import CANDIDATE_CAP, PER_RESULT, SearchPlan, estimate_keys, estimated_df, plan_search
from .search_sql import (
    Filter,
    FtsColumn,
    RankedRow,
    SearchSpec,
    build_anchor_sql,
    build_ranked_sql,
    build_sample_sql,
    build_search_sql,
    build_term_scores_sql,
    hit_chunk,
)
from .snippets import clamp_snippet_length, make_snippet
from .stemming import Matches, QueryMatcher, stems
from .term_stats import TermStats
from .vocabulary import Vocabulary

MAX_OFFSET = 10_000
SYNC_PAGE_ITEMS = 100
"""A ranked page of at most this many candidate items is read on the event loop's thread."""


@dataclass
class SearchRequest:
    query: str
    limit: int = 10
    offset: int = 0
    snippet_length: int | None = None
    order_by: OrderBy | None = None
    filters: list[Filter] = field(default_factory=list)
    columns: tuple[FtsColumn, ...] | None = None
    """Match only in these FTS columns (`("body",)`: not in titles); None matches in all."""
    details: bool = True
    """False: leave each result's snippet and matched terms to `ResultItem.fill_details`, for
    callers (knowledge_search) that keep only some of the results."""


class SearchOptions(BaseModel):
    """A source's own search filters (its `*_search` arguments beyond the shared ones).

    Subclassed per source; the source's tool and `knowledge_search(filters={source: {...}})`
    both build their `SearchRequest` from it through `ChunkedSource.search_request`.
    """

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Found:
    """A search's page rows (one more than asked, when there are more) and estimated total."""

    rows: list[aiosqlite.Row]
    total: int | None
    """None: no query term matches anything."""
    terms_of: Callable[[int], list[str]] | None = None
    """The query terms a hit chunk (by rowid) matches, when the ranking knows them."""


Databases = Callable[[str], Awaitable[Database]]
"""The caller's database of a named source, for filters that look into another source."""

SearchScope = tuple[list[Filter], tuple[FtsColumn, ...] | None]
"""A search's filters, and the FTS columns it matches in (None: all)."""


ITEM_BY_ID_SQL = "SELECT * FROM {p}_items WHERE item_id = ?"
CHUNKS_OF_ITEM_SQL = "SELECT * FROM {p}_chunks WHERE item_rowid = ? ORDER BY chunk_index"


class ChunkedSource(Generic[R]):
    name: ClassVar[SourceName]
    id_field: ClassVar[str]
    result_model: type[R]
    migrations: ClassVar[tuple[Migration, ...]]
    extensions: ClassVar[frozenset[str]]
    options_model: ClassVar[type[SearchOptions]] = SearchOptions
    # Title vs body bm25 weights; 3:1 ranked best on SciFact train (nDCG@10 0.699 vs 0.697 at 2:1).
    weights: ClassVar[tuple[float, float]] = (3.0, 1.0)

    # -- what each source provides -------------------------------------------------------
    def parse_file(self, path: Path, raw: bytes) -> list[ParsedItem]:
        raise NotImplementedError

    def fields(self, item: aiosqlite.Row, chunk: aiosqlite.Row | None) -> dict[str, Any]:
        """Type-aware result fields of this source, from the item's meta and the hit chunk."""
        return {}

    def loc(self, item: aiosqlite.Row, chunk: aiosqlite.Row) -> Loc:
        return Loc(chunk_index=chunk["chunk_index"], approx_offset=chunk["start_offset"])

    def anchor_from_loc(self, loc: Loc, chunks: list[aiosqlite.Row]) -> int | None:
        """The chunk index a loc points at, or None when it names none."""
        if loc.chunk_uuid:
            for c in chunks:
                if c["chunk_uuid"] == loc.chunk_uuid:
                    return int(c["chunk_index"])
        if loc.chunk_index is not None:
            if loc.chunk_index >= len(chunks):
                raise InvalidArgumentError("loc.chunk_index", f"must be 0..{len(chunks) - 1} for this item")
            return loc.chunk_index
        if loc.approx_offset is not None:
            for c in chunks:
                if c["start_offset"] <= loc.approx_offset < c["end_offset"]:
                    return int(c["chunk_index"])
            return len(chunks) - 1
        return None

    def search_filters(self, options: Any) -> list[Filter]:
        """The SQL filters of this source's search options (none by default)."""
        return []

    async def search_request(
        self,
        query: str,
        options: Any,
        *,
        limit: int = 10,
        offset: int = 0,
        snippet_length: int | None = None,
        order_by: OrderBy | None = None,
        databases: Databases | None = None,
    ) -> SearchRequest:
        """The request for `query` with this source's `options` (an `options_model`, or None)."""
        filters, columns = await self.search_scope(options, databases)
        return SearchRequest(query, limit, offset, snippet_length, order_by, filters, columns)

    async def search_scope(self, options: Any, databases: Databases | None) -> SearchScope:
        """The filters and FTS columns of this source's `options` (or None): `search_filters` in
        every column by default; a source whose options pick columns, or look into another
        source, overrides this."""
        return (self.search_filters(options) if options is not None else []), None

    async def complete(self, results: list[R], databases: Databases | None) -> None:
        """Fill fields that need another source (chats: the linked character card)."""

    # -- shared behaviour ----------------------------------------------------------------
    def uri(self, item_id: str) -> str:
        return f"{self.name}://{item_id}"

    def sql(self, template: str, **kw: Any) -> str:
        return template.format(p=self.name, **kw)

    def result(self, item: aiosqlite.Row, chunk: aiosqlite.Row | None, **hit: Any) -> R:
        base: dict[str, Any] = {
            "id": item["item_id"],
            "source": self.name,
            "uri": self.uri(item["item_id"]),
            "title": item["title"],
            "created_at": item["created_at"],
            "last_modified": item["last_modified"],
            "version": item["version"],
            "tags": json.loads(item["tags"]),
            "loc": self.loc(item, chunk) if chunk is not None else None,
            "snippet": hit.pop("snippet", ""),
            "score": hit.pop("score", 0.0),
            "rank": hit.pop("rank", 1),
        }
        base.update(hit)
        base.update(self.fields(item, chunk))
        return self.result_model.model_validate(base)

    async def search(self, db: Database, request: SearchRequest, defaults: Defaults) -> SearchResponse[R]:
        if request.offset > MAX_OFFSET:
            raise InvalidArgumentError("offset", f"must be 0..{MAX_OFFSET}")
        warnings: list[str] = []
        snippet_length = clamp_snippet_length(request.snippet_length, defaults.snippet_length, warnings)
        query = parse_query(request.query)
        if query.is_empty:
            warnings.append("query has no searchable words; use letters or digits")
            return SearchResponse[self.result_model](  # type: ignore[name-defined]
                results=[], count=0, has_more=False, next_offset=None, total_estimated=0, warnings=warnings
            )
        order_by = request.order_by or defaults.order_by
        found = await self._search_in_memory(db, query, request, order_by)
        if found is None:
            found = await self._search_fts(db, query, request, order_by, warnings)
        rows, total = found.rows, found.total
        if total is None:
            return SearchResponse[self.result_model](  # type: ignore[name-defined]
                results=[], count=0, has_more=False, next_offset=None, total_estimated=0, warnings=warnings
            )
        has_more = len(rows) > request.limit
        rows = rows[: request.limit]
        results = await self._hits(
            query, rows, request.offset, snippet_length, request.details, found.terms_of
        )
        return SearchResponse[self.result_model](  # type: ignore[name-defined]
            results=results,
            count=len(results),
            has_more=has_more,
            next_offset=request.offset + len(results) if has_more else None,
            total_estimated=max(total, request.offset + len(results)),
            top_score=max((r.score for r in results), default=None),
            warnings=warnings,
        )

    async def _search_fts(
        self, db: Database, query: ParsedQuery, request: SearchRequest, order_by: str, warnings: list[str]
    ) -> Found:
        """The page from FTS5 under a `search_plan`."""
        indexes = self.memory_indexes(db)
        vocabulary = indexes.terms() if any(t.prefix for t in query.terms) else None
        noted: list[str] = []
        found = await self._search_planned(db, query, request, order_by, noted, vocabulary)
        if vocabulary is not None and not indexes.still(vocabulary):
            # A commit since the vocabulary was read may have added a term a prefix matches.
            noted = []
            found = await self._search_planned(db, query, request, order_by, noted, None)
        warnings += noted
        return found

    async def _search_planned(
        self,
        db: Database,
        query: ParsedQuery,
        request: SearchRequest,
        order_by: str,
        warnings: list[str],
        vocabulary: Vocabulary | None,
    ) -> Found:
        same_rows = _expansions(query.terms, vocabulary) if vocabulary is not None else {}
        keys = [k for t in query.terms for k in estimate_keys(t)]
        stats = await self.term_stats(db).lookup(db, keys, same_rows)
        depth = request.offset + request.limit
        plan = plan_search(query.terms, estimated_df(query.terms, stats.df), stats.chunks, depth, same_rows)
        if plan is None:
            return Found([], None)
        if order_by != "relevance" and not plan.exact:
            # Newest first over every match: candidates picked by relevance would skew it.
            plan = SearchPlan(plan.refill or plan.match, estimated_rows=plan.estimated_rows)
        spec = SearchSpec(
            table=self.name,
            match=plan.match,
            limit=request.limit,
            offset=request.offset,
            order_by=order_by,  # type: ignore[arg-type]
            weights=self.weights,
            filters=tuple(request.filters),
            columns=request.columns,
            candidates=plan.candidates,
            cap=plan.cap,
            flat_score=plan.flat_score,
        )
        read = plan.cap
        if plan.flat_score is not None and plan.sample_items is not None:
            rows, read, complete = await self._newest_items(db, spec, plan.flat_score, plan.sample_items)
            if complete:
                # The sample holds every matching row: it is the whole answer, newest first.
                # Scoring it by bm25 would read every row again (FTS5 counts a term's rows for
                # its idf by reading them): a sparse phrase of common words paid twice.
                return Found(rows, int(rows[0]["total"]) if rows else 0)
        else:
            rows = await db.fetchall(*build_search_sql(spec))
        if len(rows) <= request.limit and plan.refill is not None:
            # The candidates ran out before the page filled: score every match instead.
            plan = SearchPlan(plan.refill, estimated_rows=plan.estimated_rows)
            spec = replace(spec, match=plan.match, candidates=None, cap=None, flat_score=None)
            rows = await db.fetchall(*build_search_sql(spec))
        if plan.cap is not None:
            how = "newest first" if plan.flat_score is not None else "ranked"
            warnings.append(
                f"the rarest query word matches about {plan.estimated_rows} chunks: searched the "
                f"{read} most recently indexed ({how}); add a rarer word to search them all"
            )
        total = int(rows[0]["total"]) if rows else 0
        if not plan.exact:
            total = max(total, min(plan.estimated_rows, stats.items))
        return Found(rows, total)

    async def _newest_items(
        self, db: Database, spec: SearchSpec, score: float, want: int
    ) -> tuple[list[Any], int, bool]:
        """An unranked sample's page: the newest matching chunks (at most `spec.cap`), read until
        they name `want` items, each item with its newest chunk and all `score`. Also how many
        rows were read, and whether they are every match.

        FTS5 hands rows back as they are read, so a phrase of common words found in most of its
        rows stops after a few dozen, not after `spec.cap` (a chat's many messages, a document's
        many chunks would otherwise fill the cap with a handful of items). Rows are read in
        growing batches, each after the last rowid seen; the first is usually enough."""
        cap = spec.cap
        assert cap is not None  # an unranked plan is a sample: always capped
        found: dict[int, list[Any]] = {}
        read, before, complete = 0, None, False
        batch = want  # at least a row per item
        while len(found) < want and read < cap:
            asked = min(batch, cap - read)
            rows = await db.fetchall(*build_sample_sql(spec, asked, before))
            read += len(rows)
            for chunk_rowid, item_rowid in rows:
                entry = found.get(item_rowid)
                if entry is not None:
                    entry[3] += 1
                elif len(found) < want:
                    found[item_rowid] = [item_rowid, chunk_rowid, score, 1]
            if len(rows) < asked:
                complete = True
                break
            before = rows[-1][0]
            batch *= 4
        page = await self._ranked_page(self.memory_indexes(db), spec, [tuple(v) for v in found.values()])
        return page, read, complete

    async def _search_in_memory(
        self, db: Database, query: ParsedQuery, request: SearchRequest, order_by: str
    ) -> Found | None:
        """`_search_fts`'s answer from the source's `memory_index`, exact; None when FTS5 must
        answer (no current copy, or an option the copy does not rank)."""
        if order_by != "relevance" or request.columns is not None or any(f.on_chunk for f in request.filters):
            return None
        indexes = self.memory_indexes(db)
        index = indexes.current()
        if index is None:
            return None
        depth = request.offset + request.limit
        want = max(CANDIDATE_CAP, PER_RESULT * depth) if request.filters else depth + 1
        terms = await self._query_terms(db, query)
        ranked = index.rank(terms, want)
        if ranked.total == 0:
            return Found([], None) if indexes.still(index) else None
        filters = tuple(request.filters)
        spec = SearchSpec(self.name, match="", limit=request.limit, offset=request.offset, filters=filters)
        rows = await self._ranked_page(indexes, spec, ranked.rows())
        everything = len(ranked.item_rowids) == ranked.total
        if len(rows) <= request.limit and not everything:
            # The item filters left the page short: rank every match.
            ranked = index.rank(terms, ranked.total)
            rows = await self._ranked_page(indexes, spec, ranked.rows())
        if not indexes.still(index):
            return None  # the database changed under the copy (a new one is being made)
        # With item filters, the total is of the items passed to SQL (all of them, or the best).
        total = int(rows[0]["total"]) if request.filters and rows else ranked.total
        texts = query.term_texts
        matched = ranked.terms_in([r["chunk_rowid"] for r in rows])
        return Found(rows, total, lambda rowid: [texts[n] for n in matched[rowid]])

    async def _query_terms(self, db: Database, query: ParsedQuery) -> list[QueryTerm]:
        """The query's terms as the memory copy ranks them: a word as its index term, a phrase
        or prefix as its rows scored by FTS5 (`_scored_alone`)."""
        words = stems(t.words[0] for t in query.terms)
        alone = [t for t in query.terms if not _plain(t)]
        hits = iter(await self._scored_alone(db, alone) if alone else [])
        return [words[n] if _plain(t) else next(hits) for n, t in enumerate(query.terms)]

    async def rank_in_memory(self, db: Database, query: str, want: int = 10) -> Ranked | None:
        """Only the ranking step of a search from the memory copy (no page read, no snippets):
        the best `want` items' rowids and bm25, or None without a current copy. For `eval`,
        to compare with an in-memory BM25 library."""
        index = self.memory_indexes(db).current()
        parsed = parse_query(query)
        if index is None or parsed.is_empty:
            return None
        return index.rank(await self._query_terms(db, parsed), want)

    async def _ranked_page(
        self, indexes: MemoryIndexes, spec: SearchSpec, ranked: list[RankedRow]
    ) -> list[Any]:
        """The page of items ranked here: a small one read on the loop's thread (`read_here`)."""
        sql, params = build_ranked_sql(spec, ranked)
        if len(ranked) <= SYNC_PAGE_ITEMS and indexes.can_read_here():
            return indexes.read_here(sql, params)
        return await indexes.db.fetchall(sql, params)

    async def _scored_alone(self, db: Database, terms: list[Term]) -> list[Hits]:
        """Phrases and prefixes need word positions the memory copy lacks: FTS5 scores each
        alone (its exact share of the OR query's bm25), all in one statement."""
        sql, params = build_term_scores_sql(self.name, self.weights, [t.fts() for t in terms])
        if any(t.prefix for t in terms):
            rows = await db.fetchall(sql, params)
        else:  # a phrase reads at most its words' rows (of a small source): here, not a thread
            rows = self.memory_indexes(db).read_here(sql, params)
        by_term: list[list[Any]] = [[] for _ in terms]
        for n, rowid, bm25 in rows:
            by_term[n].append((rowid, bm25))
        return [
            (np.array([r for r, _ in mine], dtype=np.int64), np.array([b for _, b in mine], dtype=np.float64))
            for mine in by_term
        ]

    def memory_indexes(self, db: Database) -> MemoryIndexes:
        """This source's in-memory copy of `db`'s index (see `memory_index`)."""
        indexes = db.caches.get("memory_index")
        if indexes is None:
            indexes = db.caches["memory_index"] = MemoryIndexes(db, self.name, self.weights)
        return indexes  # type: ignore[no-any-return]

    def term_stats(self, db: Database) -> TermStats:
        """This source's cached term statistics for `db`."""
        stats = db.caches.get("term_stats")
        if stats is None:
            stats = db.caches["term_stats"] = TermStats(self.name)
        return stats  # type: ignore[no-any-return]

    async def _hits(
        self,
        query: ParsedQuery,
        rows: list[aiosqlite.Row],
        offset: int,
        snippet_length: int,
        details: bool = True,
        terms_of: Callable[[int], list[str]] | None = None,
    ) -> list[R]:
        if not rows:
            return []
        hit_chunks = [hit_chunk(row) for row in rows]
        matcher = QueryMatcher(query)
        results = [
            self.result(
                row,
                chunk,
                score=calibrated(row["b"], len(query.terms)),
                rank=offset + position + 1,
                match_count=row["n"],
            )
            for position, (row, chunk) in enumerate(zip(rows, hit_chunks, strict=True))
        ]
        if not details:
            for result, chunk in zip(results, hit_chunks, strict=True):
                result._details = partial(_describe_later, result, chunk, matcher, snippet_length, terms_of)
        elif terms_of is not None:
            for result, chunk in zip(results, hit_chunks, strict=True):
                _describe_later(result, chunk, matcher, snippet_length, terms_of)
        else:
            matches = matcher.find_all([(c["body"], c["title"]) for c in hit_chunks])
            for result, chunk, found in zip(results, hit_chunks, matches, strict=True):
                _describe(result, chunk, found, snippet_length)
        return results

    async def load_item(self, db: Database, item_id: str) -> tuple[aiosqlite.Row, list[aiosqlite.Row]]:
        item = await db.fetchone(self.sql(ITEM_BY_ID_SQL), (item_id,))
        if item is None:
            raise NotFoundError(self.id_field, item_id, f"use an id from {self.name}_search results")
        chunks = await db.fetchall(self.sql(CHUNKS_OF_ITEM_SQL), (item["id"],))
        return item, chunks

    async def find_anchor(
        self,
        db: Database,
        item: aiosqlite.Row,
        chunks: list[aiosqlite.Row],
        loc: Loc | None,
        query: str | None,
    ) -> int:
        if loc is not None:
            anchor = self.anchor_from_loc(loc, chunks)
            if anchor is not None:
                return anchor
        parsed = parse_query(query or "")
        if not parsed.is_empty and chunks:
            row = await db.fetchone(build_anchor_sql(self.name), (parsed.match_expression(), item["id"]))
            if row is not None:
                return int(row[0])
        return 0

    async def get(
        self,
        db: Database,
        item_id: str,
        *,
        loc: Loc | None = None,
        query: str | None = None,
        retrieval: Retrieval | None = None,
        defaults: Defaults,
    ) -> GetResponse[R]:
        warnings: list[str] = []
        budget = resolve_budget(retrieval, defaults, warnings)
        item, chunks = await self.load_item(db, item_id)
        anchor = await self.find_anchor(db, item, chunks, loc, query) if chunks else 0
        meta = self.result(item, chunks[anchor] if chunks else None, snippet="", score=1.0, rank=1)
        content, truncated, next_step = self.window(item, chunks, anchor, budget, loc, query)
        meta.snippet = make_snippet(content, budget.snippet_length) if content else ""
        return GetResponse[self.result_model](  # type: ignore[name-defined]
            meta=meta,
            content=content,
            mode_used=budget.mode,
            estimated_tokens=estimate_tokens(content, budget.chars_per_token),
            truncated=truncated,
            next=next_step,
            warnings=warnings,
        )

    def window(
        self,
        item: aiosqlite.Row,
        chunks: list[aiosqlite.Row],
        anchor: int,
        budget: Budget,
        loc: Loc | None,
        query: str | None,
    ) -> tuple[str, bool, NextStep | None]:
        """The text to return for the budget's mode, whether it was cut, and how to go on."""
        text: str = item["content"]
        if budget.mode == "full" or not chunks:
            start = loc.approx_offset if loc is not None and loc.approx_offset is not None else 0
            w = full_window(text, start, budget)
            nxt = None
            if w.truncated:
                nxt = NextStep(
                    loc=Loc(approx_offset=w.end), retrieval={"mode": "full", "max_tokens": budget.max_tokens}
                )
            return text[w.start : w.end], w.truncated, nxt
        spans = [Span(c["start_offset"], c["end_offset"]) for c in chunks]
        if budget.mode == "snippet":
            snippet_budget = min(budget.snippet_length, budget.max_chars)
            body = chunks[anchor]["body"]
            match_at = _first_match(body, query)
            snippet = make_snippet(body, snippet_budget, match_at)
            nxt = NextStep(loc=self.loc(item, chunks[anchor]), retrieval={"mode": "chunk"})
            return snippet, len(snippet) < len(body), nxt
        w = chunk_window(text, spans, anchor, budget, siblings=budget.mode == "chunk_with_siblings")
        nxt = None
        if w.truncated:
            nxt = NextStep(
                loc=Loc(approx_offset=w.end), retrieval={"mode": "full", "max_tokens": budget.max_tokens}
            )
        elif w.last_chunk + 1 < len(chunks):
            nxt = NextStep(loc=self.loc(item, chunks[w.last_chunk + 1]), retrieval={"mode": budget.mode})
        return text[w.start : w.end], w.truncated, nxt


def _describe(result: ResultItem, chunk: aiosqlite.Row, found: Matches, snippet_length: int) -> None:
    result.snippet = make_snippet(chunk["body"], snippet_length, found.first)
    result.matched_terms = found.terms


def _describe_later(
    result: ResultItem,
    chunk: aiosqlite.Row,
    matcher: QueryMatcher,
    snippet_length: int,
    terms_of: Callable[[int], list[str]] | None = None,
) -> None:
    if terms_of is None:
        found = matcher.find(chunk["body"], chunk["title"])
    else:  # the ranking knows which terms the chunk matches: only the snippet's place is looked for
        terms = terms_of(chunk["id"])
        found = Matches(matcher.first_match(chunk["body"], terms), terms)
    _describe(result, chunk, found, snippet_length)


def _expansions(terms: tuple[Term, ...], vocabulary: Vocabulary) -> dict[str, str]:
    """The prefixes among `terms` (by `Term.fts()`) that `vocabulary` can match as an OR of
    their index terms."""
    found: dict[str, str] = {}
    for term in terms:
        if term.prefix and len(term.words) == 1:
            expansion = vocabulary.expansion(term.words[0])
            if expansion is not None:
                found[term.fts()] = expansion
    return found


def _plain(term: Term) -> bool:
    """A single word (not a phrase or prefix): the memory copy scores it by itself."""
    return len(term.words) == 1 and not term.prefix


def _first_match(body: str, query: str | None) -> int | None:
    """A cheap position of the first query word in `body`, for centring a get snippet."""
    lowered = body.lower()
    positions = [lowered.find(t.words[0][:5]) for t in parse_query(query or "").terms]
    found = [p for p in positions if p >= 0]
    return min(found) if found else None
