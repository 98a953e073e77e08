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
import sqlite3
from dataclasses import dataclass

from ..stemming import stems

MAX_TERMS = 2_000_000
"""A larger vocabulary is not kept (~60 bytes a term); prefixes then stay FTS5's."""
MAX_EXPANSION = 64
"""A prefix matching more index terms than this stays a prefix (an OR of hundreds of terms
reads no faster than FTS5's merge)."""


@dataclass
class Vocabulary:
    version: int
    """The database's `PRAGMA data_version` (on `MemoryIndexes`' reader) the terms were read at."""
    terms: list[str]
    """Every index term, sorted as FTS5 sorts them (by UTF-8 bytes: Python's str order)."""

    def expansion(self, word: str) -> str | None:
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
