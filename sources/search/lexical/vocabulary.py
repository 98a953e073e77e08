"""A large source's index terms in memory, so that a prefix query reads only the rows it returns.

FTS5 answers `"trou" *` by merging the doclists of every index term starting with `trou` into
one list before it hands back a first row, however few rows the search then reads (a
newest-first sample, a term-statistics probe of the newest rows). An OR of those same terms
is read lazily, row by row, an order of magnitude sooner (`docs/performance.md`, "Lexical
search"). So where only
*which rows* match counts (candidates, unranked samples, probes), a prefix is replaced by its
`expansion`, an expression FTS5 matches on exactly the same rows. Where bm25 scores the prefix,
it stays a prefix: FTS5 scores a prefix as one phrase, an OR of its terms differently.

The terms are FTS5's own (its `fts5vocab` table, one read of the whole index in a worker
thread, seconds for a large source), kept by `MemoryIndexes` for a source too large to copy and,
like a copy, used only while the database is unchanged.
"""

from __future__ import annotations

import bisect
import itertools
import sqlite3
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from ..stemming import stems

MAX_TERMS = 2_000_000
"""A larger vocabulary is not kept (~60 bytes a term); prefixes then stay FTS5's."""
MAX_EXPANSION = 64
"""A prefix matching more index terms than this stays a prefix (an OR of hundreds of terms
reads no faster than FTS5's merge)."""
MAX_REMEMBERED = 4_096
"""Expansions a vocabulary keeps (a search asks for one twice: its counts, then its plan)."""


@dataclass
class Vocabulary:
    version: int
    """The database's `PRAGMA data_version` (on `MemoryIndexes`' reader) the terms were read at."""
    terms: list[str]
    """Every index term, sorted as FTS5 sorts them (by UTF-8 bytes: Python's str order)."""
    _expanded: dict[str, str | None] = field(default_factory=dict, repr=False, compare=False)

    def expansion(self, word: str) -> str | None:
        """`expanded(word)`, remembered: the vocabulary never changes (a new one is read after a
        commit), and knowledge_search asks for each prefix twice per source (its counts, then its
        plan), each time stemming up to `MAX_EXPANSION` terms on the event loop's thread."""
        if word in self._expanded:
            return self._expanded[word]
        if len(self._expanded) >= MAX_REMEMBERED:
            self._expanded.clear()
        found = self._expanded[word] = self.expanded(word)
        return found

    def expanded(self, word: str) -> str | None:
        """An FTS5 expression matching exactly the rows `"<word>" *` matches, read lazily; None
        when there is none to give (no or too many terms, or a word left to FTS5).

        FTS5 tokenizes a prefix like any word (lowercased, diacritics removed, porter-stemmed)
        and matches every index term starting with the result. A quoted index term is tokenized
        again when queried, and porter does not always give a stem back unchanged
        (`cheastos` -> `cheasto`): such a term is written as its own prefix, which matches it
        and only other terms inside the expansion, or the word stays FTS5's.
        """
        if not word.isascii() or not word.isalnum():
            return None
        stem = stems([word])[0]
        start = bisect.bisect_left(self.terms, stem)
        matched: list[str] = []
        for term in self.terms[start : start + MAX_EXPANSION + 1]:
            if not term.startswith(stem):
                break
            matched.append(term)
        if not matched or len(matched) > MAX_EXPANSION:
            return None
        parts: list[str] = []
        for term, again in zip(matched, stems(matched), strict=True):
            if again == term:
                parts.append(f'"{term}"')
            elif term.startswith(again) and again.startswith(stem):
                parts.append(f'"{term}" *')
            else:
                return None
        return "(" + " OR ".join(parts) + ")"


def read_vocabulary(conn: sqlite3.Connection, p: str) -> list[str] | None:
    """Every term of `p`'s FTS5 index (in an open read transaction), or None past `MAX_TERMS`."""
    conn.execute(f"CREATE VIRTUAL TABLE temp.vocabulary USING fts5vocab(main, '{p}_chunks_fts', 'row')")
    terms = [term for (term,) in conn.execute(f"SELECT term FROM temp.vocabulary LIMIT {MAX_TERMS + 1}")]
    return terms if len(terms) <= MAX_TERMS else None


MAX_EXACT_COUNT = 2**24
"""Weighted counts are kept as float32, exact below this (an integer count times integer weights)."""


@dataclass(frozen=True)
class Counts:
    """What the copy scores a prefix from, as FTS5 does (one phrase: its terms' weighted counts
    summed per chunk, then saturated once): each posting's weighted count, each chunk's length
    in tokens, the average length, and the terms in their numbers' order (sorted)."""

    freqs: npt.NDArray[np.float32]
    length: npt.NDArray[np.float64]
    avgdl: float
    names: list[str]


def counts_of(
    f: npt.NDArray[np.float64], length: npt.NDArray[np.float64], avgdl: float, names: list[str]
) -> Counts | None:
    """The `Counts` of a copy's postings, or None when FTS5 could sum them in another order to
    another float (weights that are not whole numbers) or the terms are not in FTS5's order: its
    prefixes are then scored by FTS5."""
    whole = bool(np.array_equal(f, np.floor(f))) and (len(f) == 0 or float(f.max()) < MAX_EXACT_COUNT)
    ordered = all(a < b for a, b in pairwise(names))
    if not whole or not ordered:
        return None
    return Counts(f.astype(np.float32), length, avgdl, names)


Postings = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], list[tuple[str, int]]]
"""Per (term, chunk) posting, in FTS5's order (term, then chunk): its chunk's rowid, its token
instances in the title, its instances; and each term with its number of postings, in that order."""


def read_postings(conn: sqlite3.Connection, p: str) -> Postings:
    """Every posting of the FTS5 index `<p>_chunks_fts` (in the caller's read transaction).

    Read as one integer per token instance from `fts5vocab`'s `instance` table, which FTS5 hands
    over in term then chunk order, and grouped in numpy: SQLite's own `GROUP BY term, doc` sorts
    every instance through a temporary B-tree first (`docs/performance.md`, "The index copy's
    build"). An index not in that order (or not counted as read) is grouped by SQLite."""
    conn.execute(f"CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, '{p}_chunks_fts', 'row')")
    conn.execute(f"CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, '{p}_chunks_fts', 'instance')")
    rows = conn.execute("SELECT term, doc, cnt FROM temp.terms").fetchall()
    terms = [(str(term), int(docs)) for term, docs, _ in rows]
    per_term = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
    total = int(per_term.sum())
    cursor = conn.execute("SELECT doc * 2 + (col = 'title') FROM temp.vocab")
    try:
        codes = np.fromiter(itertools.chain.from_iterable(cursor), dtype=np.int64, count=total)
    except ValueError:  # fewer instances than counted
        return _grouped_by_sqlite(conn)
    if cursor.fetchone() is not None:  # more than counted
        return _grouped_by_sqlite(conn)
    empty = np.zeros(0, dtype=np.int64)
    if total == 0:
        return empty, empty, empty, terms
    in_title = (codes & 1).astype(np.int8)
    codes >>= 1  # each instance's chunk rowid
    term_starts = np.concatenate(([0], np.cumsum(per_term)[:-1]))
    new = np.empty(total, dtype=bool)  # where a posting starts (bools: a few MB, not int64s)
    new[0] = True
    np.not_equal(codes[1:], codes[:-1], out=new[1:])
    back = codes[1:] < codes[:-1]
    back[term_starts[1:] - 1] = False  # a term's first chunk may come before the last term's last
    new[term_starts] = True
    postings_per_term = np.add.reduceat(new, term_starts, dtype=np.int64)
    if back.any() or postings_per_term.tolist() != [n for _, n in terms]:
        return _grouped_by_sqlite(conn)
    del back
    starts = np.flatnonzero(new)
    titles = np.add.reduceat(in_title, starts, dtype=np.int64)
    counts = np.diff(np.append(starts, total))
    return codes[starts], titles, counts, terms


def _grouped_by_sqlite(conn: sqlite3.Connection) -> Postings:
    postings = conn.execute(
        "SELECT doc, sum(col = 'title'), count(*) FROM temp.vocab GROUP BY term, doc ORDER BY term, doc"
    )
    grid = np.fromiter(itertools.chain.from_iterable(postings), dtype=np.int64).reshape(-1, 3)
    terms = [(str(t), int(n)) for t, n in conn.execute("SELECT term, doc FROM temp.terms ORDER BY term")]
    return grid[:, 0].copy(), grid[:, 1].copy(), grid[:, 2].copy(), terms
