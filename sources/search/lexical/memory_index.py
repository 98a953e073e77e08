"""An in-memory copy of a small source's index that ranks a plain word query in microseconds.

FTS5 ranks an OR query by visiting every row of every term and counting each term's rows for
its idf, per statement: milliseconds for a long query over a few thousand abstracts
(`docs/performance.md`, "Lexical search"). For a source of at most `MAX_CHUNKS` chunks the
index is copied once into numpy arrays (each term's chunk positions and its BM25 term weight
there), and a query of plain words is scored by adding those arrays: the same bm25 FTS5 computes
(k1 1.2, b 0.75, the source's column weights, idf clamped just above zero), to float rounding.

The copy is read from FTS5's own `fts5vocab` tables (so the tokens are FTS5's), on a separate
read-only connection in a worker thread, in one read transaction; it belongs to the database
version (`PRAGMA data_version`) seen before and after the build and is never used once the
database has changed: searches use FTS5 until a rebuild is done. A prefix is scored from the
copy's weighted counts as FTS5 scores it (`memory.prefix_hits`); a phrase needs word positions
the copy lacks: FTS5 scores it alone and the copy adds that in (`Hits`). Column filters, chunk
filters and newest-first order leave the search to FTS5 (`fts.py`).
"""

from __future__ import annotations

import asyncio
import math
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from loguru import logger

from ...storage.db import Database, mmap_size
from .sql import ident
from .vocabulary import Counts, Vocabulary, counts_of, read_postings, read_vocabulary

MAX_CHUNKS = 20_000
"""Sources with more chunks than this search with FTS5 only (a copy's build time and memory grow
with its chunks: `docs/performance.md`, "Lexical search"); `memory_index_max_chunks` in the
config sets it."""
K1 = 1.2
B = 0.75
MAX_TERM_BITS = 52
"""Which query terms a hit matched is told for this many terms (a float adds powers of two up
to 2**52 exactly); queries rarely have more."""

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


Hits = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]
"""A query term FTS5 scored alone (a phrase or prefix): its rows' rowids and bm25 (negative).
FTS5's bm25 of an OR query is a sum over its terms, so such a term adds exactly this."""
QueryTerm = str | Hits
"""An index term (a word as the tokenizer stores it), or `Hits`."""


@dataclass(frozen=True)
class Ranked:
    """A query's matching items, best first: each item's best chunk and its bm25 (negative,
    lower is better, as FTS5's `bm25()`), and how many of the item's chunks match."""

    item_rowids: Ints
    chunk_rowids: Ints
    bm25: Floats
    matching_chunks: Ints
    total: int
    """How many items match in all (the arrays may hold only the best of them)."""
    rowids: Ints
    """The copy's chunk rowid at each position."""
    term_bits: Floats
    """Per chunk position, the sum of 2**n over the query terms n it matches (exact in a
    float for up to `MAX_TERM_BITS` terms; later terms are not told apart)."""

    def rows(self) -> list[tuple[int, int, float, int]]:
        """`(item_rowid, chunk_rowid, bm25, matching_chunks)` of each item, best first."""
        columns = (self.item_rowids, self.chunk_rowids, self.bm25, self.matching_chunks)
        return list(zip(*(c.tolist() for c in columns), strict=True))

    def terms_in(self, chunk_rowids: list[int]) -> dict[int, list[int]]:
        """For each of these chunks, the positions (in the query) of the terms it matches."""
        at = np.searchsorted(self.rowids, np.array(chunk_rowids, dtype=np.int64)).clip(
            0, len(self.rowids) - 1
        )
        found: dict[int, list[int]] = {}
        for rowid, bits in zip(chunk_rowids, self.term_bits[at].astype(np.int64).tolist(), strict=True):
            found[rowid] = [n for n in range(bits.bit_length()) if bits >> n & 1]
        return found


@dataclass
class MemoryIndex:
    version: int
    """The database's `PRAGMA data_version` (on `MemoryIndexes`' reader) the copy was made at."""
    rowids: Ints
    """Chunk rowid at each position (ascending)."""
    item_of: Ints
    """Item position of each chunk position."""
    item_rowids: Ints
    """Item rowid at each item position."""
    terms: dict[str, int]
    """Each indexed term's number: its postings are `positions[bounds[n]:bounds[n + 1]]` (the
    chunk positions it occurs in) and the same slice of `weights` (its bm25 term weight there,
    without idf). Plain ints and three arrays: nothing for the garbage collector to walk."""
    bounds: list[int]
    positions: Ints
    weights: Floats
    counts: Counts | None = None
    """For prefixes (`memory.prefix_hits`); None: FTS5 scores them."""

    @property
    def chunks(self) -> int:
        return len(self.rowids)

    def idf(self, rows: int) -> float:
        """FTS5's idf of a term in `rows` rows: log((N - n + 0.5) / (n + 0.5)), clamped to 1e-6
        when not positive."""
        value = math.log((self.chunks - rows + 0.5) / (rows + 0.5))
        return value if value > 0 else 1e-6

    def rows_of(self, term: QueryTerm) -> int:
        """How many rows `term` matches (what its idf counts)."""
        if isinstance(term, str):
            n = self.terms.get(term)
            return 0 if n is None else self.bounds[n + 1] - self.bounds[n]
        return len(term[0])

    def newest_rowid(self, term: QueryTerm, n: int) -> int:
        """The rowid of the `n`-th newest (highest rowid) of `term`'s rows (it has at least `n`)."""
        if not isinstance(term, str):
            return int(term[0][len(term[0]) - n])  # `Hits`' rowids ascend
        end = self.bounds[self.terms[term] + 1]
        return int(self.rowids[self.positions[end - n]])

    def _contribution(self, term: QueryTerm) -> tuple[Ints, Floats]:
        """The chunk positions `term` matches and what it adds to their bm25 (positive)."""
        if isinstance(term, str):
            n = self.terms.get(term)
            if n is None:
                return _NONE
            start, end = self.bounds[n], self.bounds[n + 1]
            return self.positions[start:end], self.idf(end - start) * self.weights[start:end]
        rowids, bm25 = term
        positions = np.searchsorted(self.rowids, rowids).clip(0, max(0, self.chunks - 1))
        known = self.rowids[positions] == rowids if self.chunks else np.zeros(0, dtype=bool)
        return positions[known], -bm25[known]

    def _sum(self, parts: list[tuple[Ints, Floats]]) -> Floats:
        """Every chunk's bm25 (positive; 0: no match) from its terms' contributions."""
        parts = parts or [_NONE]
        return np.bincount(
            np.concatenate([p for p, _ in parts]),
            weights=np.concatenate([w for _, w in parts]),
            minlength=self.chunks,
        ).astype(np.float64, copy=False)

    def scores_of(self, terms: list[QueryTerm]) -> dict[int, float]:
        """The bm25 (positive) of every chunk matching an OR of `terms`, by rowid; no term left
        out (FTS5's own scores of the same query, for checks)."""
        acc = self._sum([self._contribution(t) for t in terms])
        matched = np.flatnonzero(acc)
        return dict(zip(self.rowids[matched].tolist(), acc[matched].tolist(), strict=True))

    def rank(self, terms: list[QueryTerm], want: int) -> Ranked:
        """Items matching an OR of `terms`, best first. The arrays hold at least the best `want`
        items and every item scoring as well as the last of them (SQL breaks such ties), or all.

        As `plan.py`, a term in more than half the rows is left out unless nothing else
        matches (its idf is clamped to ~0: it changes no score, it only adds matches). Only the
        best chunks are sorted: every chunk scoring at least some cut-off is taken, so each item
        among them comes with its best chunk and ranks above every item left out.
        """
        parts = [self._contribution(t) for t in terms]
        present = [n for n, (positions, _) in enumerate(parts) if len(positions)]
        kept = [n for n in present if len(parts[n][0]) * 2 <= self.chunks] or present
        acc = self._sum([parts[n] for n in kept])
        matched = np.flatnonzero(acc)
        values = acc[matched]
        counts = np.bincount(self.item_of[matched], minlength=len(self.item_rowids))
        take = max(1, 4 * want)
        while True:
            chosen = matched
            if take < len(matched):
                cut = np.partition(values, len(values) - take)[len(values) - take]
                chosen = matched[values >= cut]
            chosen = chosen[np.argsort(-acc[chosen], kind="stable")]
            items, first = np.unique(self.item_of[chosen], return_index=True)
            if len(items) >= want or len(chosen) == len(matched):
                break
            take *= 4
        best = chosen[np.sort(first)]
        if len(best) > want > 0:
            # Keep the best `want` and every item tied with the last of them.
            best = best[acc[best] >= acc[best[want - 1]]]
        positions = self.item_of[best]
        told = parts[:MAX_TERM_BITS]
        powers = np.repeat(2.0 ** np.arange(len(told)), [len(p) for p, _ in told])
        bits = self._sum([(np.concatenate([p for p, _ in told] or [_NONE[0]]), powers)])
        return Ranked(
            item_rowids=self.item_rowids[positions],
            chunk_rowids=self.rowids[best],
            bm25=-acc[best],
            matching_chunks=counts[positions],
            total=int(np.count_nonzero(counts)),
            rowids=self.rowids,
            term_bits=bits,
        )


_NONE: tuple[Ints, Floats] = (np.zeros(0, dtype=np.int64), np.zeros(0))


def build(
    path: Path, table: str, weights: tuple[float, float], max_chunks: int
) -> MemoryIndex | Vocabulary | None:
    """Copy `table`'s FTS5 index at `path` into memory; when it has more than `max_chunks` chunks
    (or `max_chunks` is 0), only its terms (`vocabulary`); None when there are too many of those.

    Runs in a worker thread on its own read-only connection, in one read transaction; one copy
    is built at a time in the process.
    """
    with _ONE_BUILD_AT_A_TIME:  # a second core stays free for searches
        return _build(path, ident(table), weights, max_chunks)


_ONE_BUILD_AT_A_TIME = threading.Lock()


def _build(
    path: Path, p: str, weights: tuple[float, float], max_chunks: int
) -> MemoryIndex | Vocabulary | None:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("BEGIN")
        # Counting stops one past the limit: a large source costs no scan of its chunks.
        limited = f"SELECT count(*) FROM (SELECT 1 FROM {p}_chunks LIMIT {max(0, int(max_chunks)) + 1})"
        if max_chunks <= 0 or conn.execute(limited).fetchone()[0] > max_chunks:
            vocabulary = read_vocabulary(conn, p)
            return None if vocabulary is None else Vocabulary(0, vocabulary)
        pairs = conn.execute(f"SELECT id, item_rowid FROM {p}_chunks ORDER BY id").fetchall()
        rowids = np.fromiter((r[0] for r in pairs), dtype=np.int64, count=len(pairs))
        chunk_items = np.fromiter((r[1] for r in pairs), dtype=np.int64, count=len(pairs))
        # SQLite reads the index's token instances in C, where the GIL is released: a copy built
        # while the server answers searches barely slows them (`vocabulary.read_postings`).
        chunks, titles, counts, terms = read_postings(conn, p)
        conn.execute("COMMIT")
    finally:
        conn.close()
    in_title, tokens = titles.astype(np.float64), counts.astype(np.float64)
    f = weights[0] * in_title + weights[1] * (tokens - in_title)
    at = np.searchsorted(rowids, chunks)
    length = np.bincount(at, weights=tokens, minlength=len(rowids)).astype(np.float64, copy=False)
    avgdl = float(length.sum()) / max(1, len(rowids))
    index = from_postings(rowids, chunk_items, chunks, f, length, avgdl, terms)
    index.counts = counts_of(f, length, avgdl, [term for term, _ in terms])
    return index


def from_postings(
    rowids: Ints,
    chunk_items: Ints,
    chunks: Ints,
    f: Floats,
    length: Floats,
    avgdl: float,
    terms: list[tuple[str, int]],
) -> MemoryIndex:
    """The copy of an index given as postings, both stores' (SQLite's `fts5vocab`, PostgreSQL's
    posting blocks): `rowids` the chunks (ascending) and `chunk_items` their items; a posting
    per (term, chunk), ordered by term then chunk, with its chunk's rowid (`chunks`) and its
    weighted term frequency `f` (title weight x count in the title + body weight x count in the
    body); `length` each chunk's tokens (by chunk position); `terms` each term and its number of
    postings, in the postings' order."""
    item_rowids, item_of = np.unique(chunk_items, return_inverse=True)
    positions = np.searchsorted(rowids, chunks)
    dl = length[positions]
    weight = f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * dl / avgdl)) if avgdl else f
    bounds = [0, *np.cumsum([n for _, n in terms]).tolist()]
    numbers = {term: n for n, (term, _) in enumerate(terms)}
    return MemoryIndex(0, rowids, item_of.astype(np.int64), item_rowids, numbers, bounds, positions, weight)


Built = TypeVar("Built", MemoryIndex, Vocabulary)


class MemoryIndexes:
    """The memory index of one source database: built in the background when the database is
    small enough, replaced after it changes, used only while it matches the database. For a
    larger database, its `Vocabulary` instead, on the same terms.

    A read-only connection of its own, used only on the event loop's thread, tells whether the
    database changed (its `PRAGMA data_version` moves with every commit of any other
    connection, the server's own included: a few microseconds, no trip to a worker thread) and
    reads the small page a ranking needs (`read_here`).
    """

    def __init__(self, db: Database, table: str, weights: tuple[float, float]) -> None:
        self.db = db
        self.table = table
        self.weights = weights
        self.index: MemoryIndex | None = None
        self.vocabulary: Vocabulary | None = None
        self.skip_at: int | None = None
        """The version found too large (or failing) to copy: not tried again until it changes."""
        self._task: asyncio.Task[None] | None = None
        self._reader: sqlite3.Connection | None = None
        self._broken = False

    def _connection(self) -> sqlite3.Connection | None:
        if self._reader is None and not self._broken:
            try:
                reader = sqlite3.connect(f"file:{self.db.path}?mode=ro", uri=True, isolation_level=None)
                reader.row_factory = sqlite3.Row
                reader.execute("PRAGMA query_only = ON")
                reader.execute(f"PRAGMA mmap_size = {mmap_size(self.db.path)}")
                self._reader = reader
            except sqlite3.Error as error:  # no file to read (e.g. in memory): FTS5 only
                logger.debug("no memory index for {}: {}", self.table, type(error).__name__)
                self._broken = True
        return self._reader

    def version(self) -> int | None:
        reader = self._connection()
        return None if reader is None else int(reader.execute("PRAGMA data_version").fetchone()[0])

    def current(self) -> MemoryIndex | None:
        """The index if it matches the database now; else None, starting a build when none runs."""
        return self._if_current(self.index)

    def terms(self) -> Vocabulary | None:
        """The vocabulary (of a source too large to copy) if it matches the database now; else
        None, starting a build when none runs. None for a source whose copy is current: no build
        then (a small source has no vocabulary, and asking for one rebuilt its copy, a second of
        a worker's time, at every prefix its copy could not count)."""
        if self.index is not None and self.current() is not None:
            return None
        return self._if_current(self.vocabulary)

    def _if_current(self, built: Built | None) -> Built | None:
        version = self.version()
        if version is None:
            return None
        if built is not None and built.version == version:
            return built
        if self._task is None and self.skip_at != version:
            self._task = asyncio.get_running_loop().create_task(self._build(version))
        return None

    def still(self, index: MemoryIndex | Vocabulary) -> bool:
        """Whether the database is still as `index` read it (nothing committed since)."""
        return self.version() == index.version

    def can_read_here(self) -> bool:
        """Whether `read_here` has a connection (not for a database without a file)."""
        return self._connection() is not None

    def read_here(self, sql: str, params: list[Any]) -> list[sqlite3.Row]:
        """Run a page query (a few dozen rows by primary key) right here on the loop's thread:
        cheaper than the trip to the database's worker thread."""
        reader = self._connection()
        assert reader is not None
        return reader.execute(sql, params).fetchall()

    async def ready(self) -> MemoryIndex | None:
        """The index of the database as it is now, waiting for its build (None: too large; its
        vocabulary is then read too)."""
        for _ in range(3):
            index = self.current()
            if index is not None or self._task is None:
                return index
            await asyncio.shield(self._task)
        return None

    async def _build(self, version: int) -> None:
        # `version` was read before the copy's snapshot; the copy is kept only if the database
        # still has that version afterwards, so no change can have slipped in between.
        try:
            limit = self.db.memory_index_max_chunks
            limit = MAX_CHUNKS if limit is None else limit
            built = await asyncio.to_thread(build, self.db.path, self.table, self.weights, limit)
            if not isinstance(built, MemoryIndex):
                self.skip_at = version  # too large to copy: its vocabulary (if any) is all
            if built is not None and self.version() == version:
                built.version = version
                if isinstance(built, MemoryIndex):
                    self.index = built
                else:
                    self.vocabulary = built
        except Exception as error:  # without a copy, FTS5 answers as before
            logger.warning("memory index of {} not built: {}", self.table, type(error).__name__)
            self.skip_at = version
        finally:
            self._task = None

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self._reader is not None:
            self._reader.close()
            self._reader = None
