"""Chunks tokenized exactly as the SQLite FTS5 index tokenizes them (`schema.TOKENIZER`).

PostgreSQL's bm25 must see FTS5's own tokens to rank as FTS5 does, so the text goes through
SQLite's porter unicode61 tokenizer on a private in-memory FTS5 table and its `fts5vocab`
'instance' table: each token with its column and position, read in the index's order (by term)
so that the postings come out grouped by term (`index`). A tiny in-process step (no I/O).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter

from ..schema import TOKENIZER

TITLE_BASE = -(2**30)
"""A title token's position is stored as TITLE_BASE + its place in the title, a body token's as
its place in the body: one array per posting, in which a phrase never runs from one column into
the other."""
TERMS_SQL = "SELECT term, cnt FROM temp.r"
"""Each term and its number of tokens, in the index's order (by term)."""
INSTANCES_SQL = f"""SELECT doc,
    CAST(CASE WHEN col = 'title' THEN offset + ({TITLE_BASE}) ELSE offset END AS text) FROM temp.v"""
"""Every token's text and position, in the index's own order, which is the postings' order: by
term (as `TERMS_SQL`), then text, then column (the title first) and place. Not sorted again (an
ORDER BY cost more than the rest), and the term not repeated on every row (its text is most
of a row's cost)."""
TermPosting = tuple[int, int, int, str]
"""(text's place in the batch, count in the title, count in the body, positions "4,17")."""


@dataclass(frozen=True)
class Indexed:
    """Texts as their postings: each term's, in the texts' order, and each text's length in
    tokens (FTS5 bm25's document length: both columns)."""

    postings: dict[str, list[TermPosting]]
    lengths: list[int]


def _indexed(terms: list[tuple[str, int]], rows: list[tuple[int, str]], count: int) -> Indexed:
    """Postings from `TERMS_SQL`'s and `INSTANCES_SQL`'s rows, in one pass: a posting's positions
    ascend, the title's first (negative: their "-" counts them)."""
    postings: dict[str, list[TermPosting]] = {}
    lengths = [0] * count
    by_text, position = itemgetter(0), itemgetter(1)
    start = 0
    for term, tokens in terms:
        mine = postings[term] = []
        for text, same in groupby(rows[start : start + tokens], by_text):
            at = list(map(position, same))
            joined = ",".join(at)
            in_title = joined.count("-")
            mine.append((text, in_title, len(at) - in_title, joined))
            lengths[text] += len(at)
        start += tokens
    return Indexed(postings, lengths)


class _Tokenizer:
    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(title, body, tokenize='{TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, t, 'instance')")
        self._conn.execute("CREATE VIRTUAL TABLE temp.r USING fts5vocab(main, t, 'row')")
        self._lock = threading.Lock()

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
                terms = self._conn.execute(TERMS_SQL).fetchall()
                rows = self._conn.execute(INSTANCES_SQL).fetchall()
            finally:
                self._conn.execute("ROLLBACK")
        if sum(tokens for _, tokens in terms) != len(rows):
            raise RuntimeError("FTS5's vocabulary tables disagree on the number of tokens")
        return _indexed(terms, rows, len(texts))


_TOKENIZER = _Tokenizer()


def index(texts: Sequence[tuple[str, str]]) -> Indexed:
    """The postings of each (title, body) (a text is its place in `texts`) and its length in
    tokens, as the FTS5 index of a source would store them."""
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
