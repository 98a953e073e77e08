"""Small sources of the PostgreSQL store ranked from an in-memory copy of their index, as SQLite's.

SQLite ranks a source of at most `memory_index_max_chunks` chunks from an exact copy of its
FTS5 index in numpy (`search/lexical/memory.py`); here the copy is made from the source's
postings (`copy.py`), so both stores rank small sources the same way, in microseconds, and the
PostgreSQL search is one round trip: the ranked items' rows read together with the source's
`generation` (moved by every write transaction, `writing.LOCK_STATS_SQL`). When the generation
is not the copy's, the copy is dropped, a new one is started and the SQL ranking answers: a
search never uses a copy older than the database. Without a copy, a build starts in the
background (one at a time in the process) and the SQL ranking answers meanwhile.

The copy answers only what it ranks exactly as `bm25.rank` does: relevance order, every
column, no filters; words, prefixes and phrases (from its word positions). Copies live per
process and are kept within `memory_index_total_mb` together, the least recently used dropped
first.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from loguru import logger

from ....search.lexical.memory_index import MAX_CHUNKS, QueryTerm, Ranked
from ....search.query import ParsedQuery
from ....search.request import NOTHING, Found, SearchContext
from ....search.scoring import norm
from ...store import Hit
from ..pool import PgDatabase, read_as
from ..postings.common_words import common_words
from ..prepared import prepared
from . import rows as statements
from .copy import STATS_SQL, PgCopy, read_copy
from .page import ordered

if TYPE_CHECKING:
    from . import PgStore

CACHE = "memory_copies"
"""The `PgDatabase.caches` key of the process's `MemoryCopies` (set by the server with its
settings; else made with the defaults on first use)."""
TOTAL_MB = 256
"""What the copies of one process hold together at most, in MB (`PgCopy.size`):
`memory_index_total_mb` in the config sets it."""
RETRY_S = 60.0
"""A source found too large to copy (or failing) is looked at again after this long."""
HITS_SQL = f"""SELECT s.generation, {statements.ITEM_COLUMNS}, {statements.CHUNK_COLUMNS}
    FROM pg_corpus_stats AS s
    LEFT JOIN (unnest(%(items)s::bigint[], %(chunks)s::bigint[]) AS p(item, chunk)
        JOIN pg_items AS i ON i.user_id = %(user)s AND i.source = %(source)s AND i.id = p.item
        JOIN pg_chunks AS c ON c.user_id = %(user)s AND c.source = %(source)s AND c.id = p.chunk) ON TRUE
    WHERE s.user_id = %(user)s AND s.source = %(source)s"""
"""The ranked hits' items and chunks and the source's generation, in one statement (one
snapshot): a row per hit after the generation, or one row of the generation alone."""

Key = tuple[str, str]


class MemoryCopies:
    """The copies of small sources' indexes in this process, by (user, source)."""

    def __init__(self, max_chunks: int | None = None, total_mb: float = TOTAL_MB) -> None:
        self.max_chunks = MAX_CHUNKS if max_chunks is None else max_chunks
        self.total_size = int(total_mb * 1_000_000)
        """The copies' bytes together at most."""
        self.copies: OrderedDict[Key, PgCopy] = OrderedDict()
        self.skipped: dict[Key, float] = {}
        """Sources found too large to copy (or failing), and when."""
        self.task: asyncio.Task[None] | None = None

    def get(self, key: Key) -> PgCopy | None:
        copy = self.copies.get(key)
        if copy is not None:
            self.copies.move_to_end(key)
        return copy

    def drop(self, key: Key) -> None:
        self.copies.pop(key, None)

    def start(self, pg: PgDatabase, key: Key, weights: tuple[float, float]) -> None:
        """Build `key`'s copy in the background, unless a build runs or it was found too large lately."""
        if self.task is not None or self.max_chunks <= 0 or self.total_size <= 0:
            return
        if time.monotonic() - self.skipped.get(key, -RETRY_S) < RETRY_S:
            return
        self.task = asyncio.get_running_loop().create_task(self._build(pg, key, weights))

    async def _build(self, pg: PgDatabase, key: Key, weights: tuple[float, float]) -> None:
        try:
            copy = await read_copy(pg, *key, weights, self.max_chunks)
            if copy is None or copy.size() > self.total_size:
                self.skipped[key] = time.monotonic()
            else:
                self.keep(key, copy)
        except Exception as error:  # without a copy, the SQL ranking answers as before
            logger.warning("memory copy of {} not built: {}", key[1], type(error).__name__)
            self.skipped[key] = time.monotonic()
        finally:
            self.task = None

    def keep(self, key: Key, copy: PgCopy) -> None:
        """Keep `copy`, dropping the least recently used copies past `total_size`."""
        self.skipped.pop(key, None)
        self.copies[key] = copy
        self.copies.move_to_end(key)
        while sum(c.size() for c in self.copies.values()) > self.total_size and len(self.copies) > 1:
            self.copies.popitem(last=False)

    async def ready(self, pg: PgDatabase, key: Key, weights: tuple[float, float]) -> PgCopy | None:
        """`key`'s current copy, built now if there is none (None: not copied), as SQLite's
        `MemoryIndexes.ready`: for benchmarks, which time searches with the copy in place."""
        await self.wait()
        if self.get(key) is None:
            self.start(pg, key, weights)
            await self.wait()
        return self.get(key)

    async def wait(self) -> None:
        """Until the running build (if any) is done."""
        if self.task is not None:
            await asyncio.shield(self.task)


async def settled(pg: PgDatabase, key: Key, weights: tuple[float, float]) -> None:
    """Until `key`'s source is searched as it is once settled (for benchmarks, as SQLite's
    `settled`): a source small enough to copy from its copy (`MemoryCopies.ready`), a larger
    one with its common words read ahead (`CommonWords.read_ahead`, which its first search
    starts and the searches beside it wait on otherwise)."""
    copies: MemoryCopies = pg.caches.setdefault(CACHE, MemoryCopies())
    if await copies.ready(pg, key, weights) is not None:
        return
    _, found = await read_as(pg, key[0], STATS_SQL, key)
    if not found or int(found[0][0]) <= copied_up_to(pg):
        return
    kept = common_words(pg)
    await kept.wait()  # another source's, one at a time
    kept.read_ahead(pg, *key, int(found[0][2]))
    await kept.wait()


def copied_up_to(pg: PgDatabase) -> int:
    """The most chunks a source copied in memory has (`memory_index_max_chunks`): a source that
    size or smaller is ranked exactly, as SQLite ranks it from its copy."""
    copies = pg.caches.get(CACHE)
    return MAX_CHUNKS if copies is None else int(copies.max_chunks)


async def search(store: PgStore, ctx: SearchContext, query: ParsedQuery) -> Found | None:
    """The page ranked from the source's copy, exactly as `lexical.lexical_page` ranks it; None
    when the SQL ranking must answer (no current copy, or a search the copy does not rank)."""
    copies: MemoryCopies = store.pg.caches.setdefault(CACHE, MemoryCopies())  # the server's: its settings
    request = ctx.request
    if query.is_empty or ctx.order_by != "relevance" or request.columns is not None or request.filters:
        return None
    key = (store.user_id, store.source)
    copy = copies.get(key)
    if copy is None:
        copies.start(store.pg, key, ctx.source.weights)
        return None
    answer = await _ranked(store, copy, query, ctx.depth + 1)
    if answer is None:  # written since the copy was made
        copies.drop(key)
        copies.start(store.pg, key, ctx.source.weights)
        return None
    terms, ranked, found = answer
    if ranked.total == 0:
        return NOTHING
    rows: list[Hit] = []
    for _, chunk, bm25, matching in ranked.rows():
        item_row, chunk_row = found[chunk]
        rows.append(Hit(item_row, chunk_row, bm25, matching, ranked.total))
    page = ordered(rows, False)[request.offset : ctx.depth + 1]
    distinct = {t.fts(): copy.rows_of(t, q) for t, q in zip(query.terms, terms, strict=True)}
    return Found(list[Any](page), ranked.total, norm=norm(distinct.values(), copy.chunks))


Answer = tuple[list[QueryTerm], Ranked, dict[int, tuple[Any, Any]]] | None
"""The query's terms as ranked, the ranking, and the ranked hits' rows; None: the copy is stale."""


async def _ranked(store: PgStore, copy: PgCopy, query: ParsedQuery, want: int) -> Answer:
    """The query ranked here, then the hits read with the generation, in one statement."""
    terms = copy.query_terms(query)
    ranked = copy.index.rank(terms, want)
    _, found = await read_as(store.pg, store.user_id, prepared(HITS_SQL), _params(store, ranked))
    if not found or found[0][0] != copy.generation:
        return None
    return terms, ranked, statements.split([r[1:] for r in found if r[1] is not None])


def _params(store: PgStore, ranked: Ranked) -> dict[str, Any]:
    return {
        "user": store.user_id,
        "source": store.source,
        "items": ranked.item_rowids.tolist(),
        "chunks": ranked.chunk_rowids.tolist(),
    }
