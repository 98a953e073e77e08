"""How common each query term is in a source's index, cached until the database changes.

FTS5 keeps no document frequencies: counting a term's rows walks its whole doclist
(`docs/performance.md`, "Lexical search"). The search planner (`plan.py`) only needs to know how common
each term is, so a term's newest `PROBE + 1` rows are read (FTS5 stops there): fewer rows is
the exact count; otherwise the count is estimated from how densely those rows lie among the
newest chunk ids. Results are kept per database until it changes: another connection's commit
moves `PRAGMA data_version`, this connection's own writes move `total_changes`. Both are read
in the same round trip as the probes of uncached terms.

`SharedStats` adds several sources' statistics up: one user's row count and each term's row
count over all of their sources, so that a score means the same in every source (a source of
forty prompts, where every word is rare or in half the rows, no longer scores on its own
scale). Each source's bm25 is scaled by one factor per query (`scale`), which keeps its order.
`norm` is the query's idf mass and unit over all the sources, which the calibration measures the
scaled bm25 against (`SearchRequest.norm`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from cachetools import LRUCache

from ...storage.db import Database
from ...storage.store import Store
from ..query import ParsedQuery, Term
from ..scoring import Norm, norm
from .memory_index import MemoryIndex, QueryTerm
from .plan import estimated_df, idf
from .sql import ident

CACHE_TERMS = 20_000
PROBE = 1_000
"""Terms in at most this many rows are counted exactly; more common ones are estimated."""


@dataclass(frozen=True)
class IndexStats:
    chunks: int
    """Rows in the source's FTS index."""
    items: int
    """Items in the source."""
    df: dict[str, int]
    """Rows matching each FTS term expression (a word, phrase or prefix)."""


@dataclass(frozen=True)
class SharedStats:
    """Row counts added up over several sources' indexes (one user's): bm25's idf for all of them."""

    chunks: int
    df: dict[str, int]
    """Rows matching each FTS term expression, in every source together."""

    @classmethod
    def of(cls, stats: list[IndexStats]) -> SharedStats:
        df: dict[str, int] = {}
        for one in stats:
            for term, rows in one.df.items():
                df[term] = df.get(term, 0) + rows
        return cls(sum(one.chunks for one in stats), df)

    def scale(self, local: IndexStats, terms: tuple[Term, ...]) -> float:
        """What one source's bm25 values are multiplied by to weigh the query's words as all the
        sources together do: the summed idf of the terms the source holds, over all sources,
        divided by the same sum over the source alone. One factor per source and query, so the
        source's own order (and its paging) stays as it is."""
        mine, everyone = estimated_df(terms, local.df), estimated_df(terms, self.df)
        held = [t.fts() for t in terms if mine[t.fts()] > 0]
        own = sum(idf(mine[t], local.chunks) for t in held)
        shared = sum(idf(max(everyone[t], mine[t]), max(self.chunks, local.chunks)) for t in held)
        return shared / own if own > 0 else 1.0

    def norm(self, terms: tuple[Term, ...]) -> Norm:
        """The query's norm over all the sources together (`scoring.Norm`): what every source's
        scaled bm25 is calibrated against in `knowledge_search`, so that coverage and evidence
        count a word as the whole collection does (in a source of one card, a name in most of
        its chunks has an idf of ~0 of its own)."""
        return norm(estimated_df(terms, self.df).values(), self.chunks)


class SharedScale:
    """knowledge_search's shared bm25 scale for one query, put together while the sources search.

    Each source's search reads its own term counts first (`Store.index_stats`, which its FTS5
    plan then reuses) and hands them in (`add`); the fan-out starts the searches once every
    source has (`settled`: the counts are read on the loop's thread, and do not wait there for
    the GIL behind the searches' worker threads); each lexical stage then takes its factor and
    the query's norm over them all (`of`). The scale is the one all of them together give
    (`SharedStats`), whatever order they answer in. A source that cannot
    count hands in None: it is left out, and keeps its own scale and norm.
    """

    def __init__(self, names: Iterable[str], query: ParsedQuery) -> None:
        self.query = query
        self.terms = query.terms
        self.names = tuple(names)
        """The sources that hand in their counts (each source's store may read them all at once)."""
        self._waiting = set(self.names)
        self._found: dict[str, IndexStats] = {}
        self._shared: SharedStats | None = None
        self._everyone: Norm | None = None
        self._settled = anyio.Event()
        if not self._waiting:
            self._settled.set()

    def add(self, name: str, stats: IndexStats | None) -> None:
        """Source `name`'s counts (None: it could not say); each source adds once."""
        if stats is not None:
            self._found[name] = stats
        self._waiting.discard(name)
        if not self._waiting:
            self._settled.set()

    async def settled(self) -> None:
        """Once every source has handed in its counts."""
        await self._settled.wait()

    async def of(self, name: str) -> tuple[float, Norm] | None:
        """Source `name`'s bm25 factor and the query's norm over every source that counted, once
        all have handed in their counts; None when `name` did not count."""
        await self._settled.wait()
        stats = self._found.get(name)
        if stats is None:
            return None
        if self._shared is None:
            self._shared = SharedStats.of(list(self._found.values()))
            self._everyone = self._shared.norm(self.terms)
        assert self._everyone is not None
        return self._shared.scale(stats, self.terms), self._everyone


class TermStats:
    """Per-database cache of the chunk count and each term's row count."""

    def __init__(self, table: str) -> None:
        self.table = ident(table)
        self._version: tuple[int, int] | None = None
        self._chunks = 0
        self._items = 0
        self._first_id = 0
        self._last_id = 0
        self._df: LRUCache[str, int] = LRUCache(CACHE_TERMS)

    def _sql(self, uncached: list[str], with_chunks: bool) -> str:
        p = self.table
        parts = ["(SELECT data_version FROM pragma_data_version())"]
        parts.append(f"(SELECT count(*) FROM {p}_chunks)" if with_chunks else "-1")
        parts.append(f"(SELECT count(*) FROM {p}_items)" if with_chunks else "-1")
        # Two subqueries: SQLite answers a lone min() or max() from the b-tree's edge, both
        # together with a scan of every row.
        parts.append(
            f"(SELECT ifnull(min(id), 0) FROM {p}_chunks) || ' ' || "
            f"(SELECT ifnull(max(id), 0) FROM {p}_chunks)"
            if with_chunks
            else "''"
        )
        probe = (
            f"(SELECT count(*) || ' ' || ifnull(min(r), 0) FROM (SELECT rowid AS r FROM {p}_chunks_fts "
            f"WHERE {p}_chunks_fts MATCH ? ORDER BY rowid DESC LIMIT {PROBE + 1}))"
        )
        return "SELECT " + ", ".join(parts + [probe] * len(uncached))

    def _estimate(self, probe: str) -> int:
        """A term's row count from its probe (`count oldest`: how many of its newest `PROBE + 1`
        rows there are, and the oldest rowid among them)."""
        count, oldest = (int(x) for x in probe.split())
        return self.estimate(count, oldest)

    def estimate(self, count: int, oldest: int) -> int:
        """A term's row count from its newest `PROBE + 1` rows (`count` of them, the oldest
        `oldest`): exact up to `PROBE`, else their density among the chunk ids times all the ids."""
        if count <= PROBE:
            return count
        span = max(1, self._last_id - oldest + 1)
        slots = max(1, self._last_id - self._first_id + 1)
        return min(self._chunks, max(count, round(count * slots / span)))

    async def counted_in(
        self, db: Database, index: MemoryIndex, words: Mapping[str, QueryTerm]
    ) -> IndexStats:
        """The counts `lookup` gives for `words` (FTS expression of a word: its index term; of a
        prefix: its rows, `memory.prefix_hits`), taken from the source's current memory copy
        `index` instead of FTS5's doclists: the copy holds each term's rows in rowid order, so
        its newest `PROBE + 1` are the probe's. Only the chunk and item counts (cached) come from
        the database."""
        base = await self.lookup(db, [])
        df: dict[str, int] = {}
        for key, stem in words.items():
            rows = index.rows_of(stem)
            newest = min(rows, PROBE + 1)
            oldest = index.newest_rowid(stem, newest) if newest else 0
            df[key] = self.estimate(newest, oldest)
        return IndexStats(base.chunks, base.items, df)

    async def lookup(
        self, db: Database, terms: list[str], same_rows: Mapping[str, str] | None = None
    ) -> IndexStats:
        """The chunk count and every term's row count (estimated past `PROBE`), probing only what
        is not cached; a term in `same_rows` is probed with that expression (the same rows, read
        faster: `vocabulary`)."""
        here = _reader(db)
        for _ in range(2):
            uncached = [t for t in dict.fromkeys(terms) if t not in self._df]
            fresh = self._version is None
            probes = [same_rows.get(t, t) for t in uncached] if same_rows else uncached
            sql = self._sql(uncached, fresh)
            row = here(sql, probes)[0] if here is not None else await db.fetchone(sql, probes)
            assert row is not None
            version = (int(row[0]), db.conn.total_changes)
            if version != self._version and not fresh:
                # The index changed since the cache was filled: forget it and count again.
                self._version = None
                self._df.clear()
                continue
            self._version = version
            if fresh:
                self._chunks, self._items = int(row[1]), int(row[2])
                self._first_id, self._last_id = (int(x) for x in str(row[3]).split())
            for term, probe in zip(uncached, row[4:], strict=True):
                self._df[term] = self._estimate(str(probe))
            break
        return IndexStats(self._chunks, self._items, {t: self._df.get(t, 0) for t in terms})


def _reader(db: Database) -> Callable[[str, list[str]], list[Any]] | None:
    """Where the counts are read: right here on the loop's thread, through the read-only
    connection of the source's memory copy (`memory_index.ChunkIndexes.read_here`) once it has
    one, as every read of a count is then (their `data_version` is that connection's); else
    on the database's own thread."""
    indexes = db.caches.get("memory_index")
    if indexes is None or not indexes.can_read_here():
        return None
    return indexes.read_here  # type: ignore[no-any-return]


def term_stats(db: Database, name: str) -> TermStats:
    """The cached term statistics of source `name`'s index in `db`."""
    stats = db.caches.get("term_stats")
    if stats is None:
        stats = db.caches["term_stats"] = TermStats(name)
    return stats  # type: ignore[no-any-return]


async def index_stats(
    store: Store, name: str, query: ParsedQuery, together: Sequence[str] = ()
) -> IndexStats:
    """Source `name`'s row count and the row counts of `query`'s terms (as the planner counts them);
    `together`: every source counting them at this moment (`Store.index_stats`)."""
    return await store.index_stats(query, together)
