"""An exact in-memory copy of one user's small source in the PostgreSQL store: its postings as
the `MemoryIndex` SQLite ranks small sources from (`search/lexical/memory_index.py`).

The copy is read in one REPEATABLE READ snapshot, in a worker thread on a connection of its
own: the source's statistics row (chunks, tokens, its `generation`), its chunks (id, item) and
the user's posting blocks of the source, unnested into (term, chunk) postings. The term weights
are `bm25.rank`'s: the title and body counts weighted by the source's column weights, each
chunk's length `dl`, avgdl the statistics' tokens / chunks, idf over the statistics' chunks. A
copy is only made when the statistics' chunk count is the chunks read (so N and avgdl are the
SQL ranking's).

A prefix is scored from the copy's raw counts, as the SQL ranking scores it (FTS5's way): its
lexemes' title and body counts summed per chunk, then weighted and saturated once; its idf
counts the chunks holding any of them. A phrase is counted from the copy's word positions
(`places.py`) and scored the same way.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from ....search.lexical.memory_index import K1, B, Floats, Hits, MemoryIndex, QueryTerm, from_postings
from ....search.query import TOP, ParsedQuery, Term
from ....search.stemming import stems
from ..bm25 import BEGIN_SQL
from ..pool import PgDatabase, read_as
from ..postings.counting import LOWEST
from ..schema import on_postings, partition_name
from .places import Places, read_places

Counts = npt.NDArray[np.int32]
TERM_BYTES = 200
"""A term's share of a copy's memory: its string twice (`lexemes`, `index.terms`), a dict entry,
a list slot and its bound."""
SETUP_SQL = "SELECT set_config('knowledge.user_id', %s, true), to_regclass(%s) IS NOT NULL"
STATS_SQL = "SELECT chunks, tokens, generation FROM pg_corpus_stats WHERE user_id = %s AND source = %s"
CHUNKS_SQL = "SELECT id, item FROM pg_chunks WHERE user_id = %s AND source = %s ORDER BY id"
POSTINGS_SQL = """SELECT lexeme, chunks, tf_titles, tf_bodies, dls, places FROM {postings}
    WHERE source = %s AND n > 0 ORDER BY lexeme, block"""
"""The source's posting blocks, each term's together (`lexeme` is COLLATE "C": Python's order)."""


@dataclass
class PgCopy:
    """A user's source as `index` at `generation`, with the raw counts prefixes are scored from."""

    index: MemoryIndex
    generation: int
    lexemes: list[str]
    """Each term, by its number in `index` (ascending)."""
    titles: Counts
    """Each posting's count in the title (the postings' order of `index.positions`)."""
    bodies: Counts
    length: Floats
    """Each chunk's tokens, by chunk position."""
    avgdl: float
    weights: tuple[float, float]
    places: Places
    """Each term's positions, for phrases."""

    @property
    def chunks(self) -> int:
        return self.index.chunks

    def query_terms(self, query: ParsedQuery) -> list[QueryTerm]:
        """The query's words as index terms, its prefixes and phrases as their hits."""
        words = stems(t.words[0] for t in query.terms)
        return [
            self.phrase(t) if len(t.words) > 1 else self.prefix(words[n]) if t.prefix else words[n]
            for n, t in enumerate(query.terms)
        ]

    def rows_of(self, term: Term, ranked: QueryTerm) -> int:
        """A term's row count as the SQL ranking's norm counts it (a phrase: its rarest word's)."""
        if len(term.words) > 1 and not term.prefix:
            return min(self.index.rows_of(word) for word in stems(term.words))
        return self.index.rows_of(ranked)

    def phrase(self, term: Term) -> Hits:
        """A phrase's bm25 (negative) in the chunks it occurs in, from its counts there
        (`places.py`), as `bm25.rank` scores `phrases.phrase_hits`."""
        words = stems(term.words)
        places = [self.places.of(*self._range(w, w + LOWEST)) for w in (words[:-1] if term.prefix else words)]
        if term.prefix:
            places.append(self.places.of(*self._range(words[-1], words[-1] + TOP)))
        titles, bodies = self.places.counts(places, self.chunks)
        hit = np.flatnonzero(titles + bodies)
        return self.index.rowids[hit], -self._score(titles[hit], bodies[hit], self.length[hit])

    def _range(self, low: str, high: str) -> tuple[int, int]:
        """The numbers of the terms from `low` to `high` (excluded)."""
        return bisect_left(self.lexemes, low), bisect_left(self.lexemes, high)

    def prefix(self, prefix: str) -> Hits:
        """The chunks holding a lexeme that starts with `prefix`, and the prefix's bm25 there
        (negative): the lexemes' counts summed per chunk, then saturated, as `bm25.rank`."""
        low, high = self._range(prefix, prefix + TOP)
        start, end = self.index.bounds[low], self.index.bounds[high]
        at = self.index.positions[start:end]
        titles, bodies = (
            np.bincount(at, weights=counts[start:end], minlength=self.chunks).astype(np.float64, copy=False)
            for counts in (self.titles, self.bodies)
        )
        hit = np.flatnonzero(titles + bodies)
        return self.index.rowids[hit], -self._score(titles[hit], bodies[hit], self.length[hit])

    def prefix_chunks(self, prefix: str) -> int:
        """How many chunks hold a lexeme that starts with `prefix`: the prefix's chunk count as
        `stats.STATS_SQL` counts it from the postings (`lexeme` is COLLATE "C": Python orders
        the lexemes as PostgreSQL does)."""
        low, high = self._range(prefix, prefix + TOP)
        at = self.index.positions[self.index.bounds[low] : self.index.bounds[high]]
        return int(np.count_nonzero(np.bincount(at, minlength=self.chunks))) if len(at) else 0

    def _score(self, titles: Floats, bodies: Floats, dl: Floats) -> Floats:
        """A term's bm25 in the chunks of these counts and lengths (all its chunks), as `bm25.rank`."""
        f = self.weights[0] * titles + self.weights[1] * bodies
        saturation = K1 * (1.0 - B + B * dl / self.avgdl) if self.avgdl else 0.0
        score: Floats = self.index.idf(len(f)) * f * (K1 + 1.0) / (f + saturation)
        return score

    def size(self) -> int:
        """Roughly the copy's memory, in bytes: its arrays and its terms (a dict entry and a
        string each)."""
        index = self.index
        arrays = (index.rowids, index.item_of, index.item_rowids, index.positions, index.weights)
        held = sum(a.nbytes for a in (*arrays, self.titles, self.bodies, self.length))
        return held + self.places.nbytes + TERM_BYTES * len(self.lexemes)


async def read_copy(
    pg: PgDatabase, user_id: str, source: str, weights: tuple[float, float], max_chunks: int
) -> PgCopy | None:
    """The copy of `user_id`'s `source`, or None when it has no chunks, more than `max_chunks`, or
    statistics that do not match its chunks. Its size is checked first (one round trip); the copy
    is read in a worker thread on a connection of its own, as SQLite's: parsing its rows holds the
    event loop no longer than the interpreter's switch interval at a time."""
    _, stats = await read_as(pg, user_id, STATS_SQL, (user_id, source))
    if not stats or not 0 < int(stats[0][0]) <= max_chunks:
        return None
    return await asyncio.to_thread(_read, pg.url, user_id, source, weights, max_chunks)


def _read(
    url: str, user_id: str, source: str, weights: tuple[float, float], max_chunks: int
) -> PgCopy | None:
    part = partition_name("pg_posting_blocks", user_id)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(BEGIN_SQL)
        has = conn.execute(SETUP_SQL, (user_id, part)).fetchall()[0][1]
        stats = conn.execute(STATS_SQL, (user_id, source)).fetchall()
        if not has or not stats or not 0 < int(stats[0][0]) <= max_chunks:
            return None
        chunks, tokens, generation = (int(v) for v in stats[0])
        pairs = conn.execute(CHUNKS_SQL, (user_id, source)).fetchall()
        blocks = conn.execute(on_postings(POSTINGS_SQL, user_id), (source,), binary=True).fetchall()  # type: ignore[arg-type]
        conn.execute("COMMIT")
    if len(pairs) != chunks:
        return None
    return _copy(pairs, blocks, chunks, tokens, generation, weights)


def _copy(
    pairs: list[tuple[Any, ...]],
    blocks: list[tuple[Any, ...]],
    chunks: int,
    tokens: int,
    generation: int,
    weights: tuple[float, float],
) -> PgCopy:
    """The copy from the snapshot's rows (numpy work: in a worker thread)."""
    grid = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    rowids, chunk_items = grid[:, 0], grid[:, 1]
    terms: list[tuple[str, int]] = []
    for lexeme, ids, *_ in blocks:
        if terms and terms[-1][0] == lexeme:
            terms[-1] = (lexeme, terms[-1][1] + len(ids))
        else:
            terms.append((lexeme, len(ids)))
    posting_chunks = _flat(blocks, 1, np.int64)
    titles, bodies = (_flat(blocks, n, np.int32) for n in (2, 3))
    dls = _flat(blocks, 4, np.float64)
    length = np.zeros(len(rowids))
    length[np.searchsorted(rowids, posting_chunks)] = dls
    f = weights[0] * titles + weights[1] * bodies
    avgdl = tokens / chunks
    index = from_postings(rowids, chunk_items, posting_chunks, f, length, avgdl, terms)
    lexemes = [lexeme for lexeme, _ in terms]
    places = read_places(
        [bytes(b[5]) for b in blocks], titles, bodies, index.positions, [n for _, n in terms], len(rowids)
    )
    return PgCopy(index, generation, lexemes, titles, bodies, length, avgdl, weights, places)


def _flat(blocks: list[tuple[Any, ...]], column: int, dtype: Any) -> Any:
    """One column of every block's arrays, end to end."""
    parts = [np.asarray(b[column], dtype=dtype) for b in blocks]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
