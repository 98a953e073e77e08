"""Chunks tokenized exactly as the SQLite FTS5 index tokenizes them (`schema.TOKENIZER`).

PostgreSQL's bm25 must see FTS5's own tokens to rank as FTS5 does, so the text goes through
SQLite's porter unicode61 tokenizer on a private in-memory FTS5 table and its `fts5vocab`
'instance' table: each token with its column and position. A tiny in-process step (no I/O).
"""

from __future__ import annotations

import sqlite3
import threading
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter

from ..schema import TOKENIZER

TITLE_BASE = -(2**30)
"""A title token's position is stored as TITLE_BASE + its place in the title, a body token's as
its place in the body: one array per posting, in which a phrase never runs from one column into
the other."""
INSTANCES_SQL = "SELECT doc, col, term FROM temp.v ORDER BY doc, col, offset"
POSTINGS_SQL = f"""SELECT term, doc, CASE WHEN col = 'title' THEN offset + ({TITLE_BASE}) ELSE offset END
    FROM temp.v"""
"""Every token in the index's own order, which is the postings' order: by term, then document,
then column (the title first) and place (not sorted again: an ORDER BY cost more than the rest)."""
TermPosting = tuple[int, int, int, str]
"""(text's place in the batch, count in the title, count in the body, positions "4,17")."""


@dataclass(frozen=True)
class Tokens:
    """A chunk's tokens, in order, per column."""

    title: list[str]
    body: list[str]

    @property
    def length(self) -> int:
        """The chunk's length in tokens (FTS5 bm25's document length: both columns)."""
        return len(self.title) + len(self.body)

    def postings(self) -> dict[str, tuple[int, int, list[int]]]:
        """Each term's count in the title and in the body, and its positions (`position`)."""
        found: dict[str, list[int]] = {}
        for at, term in enumerate(self.title, TITLE_BASE):
            found.setdefault(term, []).append(at)
        in_title = {term: len(ps) for term, ps in found.items()}
        for at, term in enumerate(self.body):
            found.setdefault(term, []).append(at)
        counts = ((term, in_title.get(term, 0), ps) for term, ps in found.items())
        return {term: (title, len(ps) - title, ps) for term, title, ps in counts}


@dataclass(frozen=True)
class Indexed:
    """Texts as their postings: each term's, in the texts' order, and each text's length."""

    postings: dict[str, list[TermPosting]]
    lengths: list[int]


def _indexed(rows: list[tuple[str, int, int]], count: int) -> Indexed:
    """Rows (term, text, position) in `POSTINGS_SQL`'s order, one pass: positions ascend, the
    title's (negative) first."""
    postings: dict[str, list[TermPosting]] = {}
    lengths = [0] * count
    by_text, position = itemgetter(1), itemgetter(2)
    for term, instances in groupby(rows, itemgetter(0)):
        mine = postings[term] = []
        for text, same in groupby(instances, by_text):
            at = list(map(position, same))
            in_title = bisect_left(at, 0)
            mine.append((text, in_title, len(at) - in_title, ",".join(map(str, at))))
            lengths[text] += len(at)
    return Indexed(postings, lengths)


class _Tokenizer:
    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(title, body, tokenize='{TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, t, 'instance')")
        self._lock = threading.Lock()

    def tokenize(self, texts: Sequence[tuple[str, str]]) -> list[Tokens]:
        out = [Tokens([], []) for _ in texts]
        if not texts:
            return out
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT INTO t(rowid, title, body) VALUES (?, ?, ?)",
                    [(n, title, body) for n, (title, body) in enumerate(texts, 1)],
                )
                for doc, col, term in self._conn.execute(INSTANCES_SQL):
                    tokens = out[doc - 1]
                    (tokens.title if col == "title" else tokens.body).append(term)
            finally:
                self._conn.execute("ROLLBACK")
        return out

    def index(self, texts: Sequence[tuple[str, str]]) -> Indexed:
        if not texts:
            return Indexed({}, [])
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT INTO t(rowid, title, body) VALUES (?, ?, ?)",
                    [(n, title, body) for n, (title, body) in enumerate(texts)],
                )
                rows = self._conn.execute(POSTINGS_SQL).fetchall()
            finally:
                self._conn.execute("ROLLBACK")
        return _indexed(rows, len(texts))


_TOKENIZER = _Tokenizer()


def tokenize(texts: Sequence[tuple[str, str]]) -> list[Tokens]:
    """The tokens of each (title, body), as the FTS5 index of a source would store them."""
    return _TOKENIZER.tokenize(texts)


def index(texts: Sequence[tuple[str, str]]) -> Indexed:
    """The postings of each (title, body) (a text is its place in `texts`) and its length in
    tokens, as the FTS5 index of a source would store them; what `tokenize` gives, grouped by
    term in one pass (the import's postings)."""
    return _TOKENIZER.index(texts)


def phrase_starts(positions: Sequence[set[int]]) -> tuple[int, int]:
    """How often a phrase occurs in the title and in the body, given the positions (as stored)
    of each of its words in one chunk: the starts p with word i at p + i for every i, as FTS5
    counts a phrase's instances in a column."""
    if not positions:
        return 0, 0
    rest = list(enumerate(positions))[1:]
    starts = [p for p in positions[0] if all(p + i in later for i, later in rest)]
    in_title = sum(p < 0 for p in starts)
    return in_title, len(starts) - in_title
