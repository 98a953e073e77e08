"""Chunks tokenized exactly as the SQLite FTS5 index tokenizes them (`schema.TOKENIZER`).

PostgreSQL's bm25 must see FTS5's own tokens to rank as FTS5 does, so the text goes through
SQLite's porter unicode61 tokenizer on a private in-memory FTS5 table and its `fts5vocab`
'instance' table: each token with its column and position. A tiny in-process step (no I/O).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from ..schema import TOKENIZER

INSTANCES_SQL = "SELECT doc, col, term FROM temp.v ORDER BY doc, col, offset"


@dataclass(frozen=True)
class Tokens:
    """A chunk's tokens, in order, per column."""

    title: list[str]
    body: list[str]

    @property
    def length(self) -> int:
        """The chunk's length in tokens (FTS5 bm25's document length: both columns)."""
        return len(self.title) + len(self.body)

    def postings(self) -> dict[str, tuple[int, int]]:
        """Each term's count in the title and in the body."""
        counts: dict[str, tuple[int, int]] = {}
        for term in self.title:
            t, b = counts.get(term, (0, 0))
            counts[term] = (t + 1, b)
        for term in self.body:
            t, b = counts.get(term, (0, 0))
            counts[term] = (t, b + 1)
        return counts


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


_TOKENIZER = _Tokenizer()


def tokenize(texts: Sequence[tuple[str, str]]) -> list[Tokens]:
    """The tokens of each (title, body), as the FTS5 index of a source would store them."""
    return _TOKENIZER.tokenize(texts)


def count_phrase(tokens: list[str], words: Sequence[str], prefix: bool) -> int:
    """How often the phrase `words` (index terms; the last one a prefix when `prefix`) occurs
    in `tokens`, as FTS5 counts a phrase's instances in a column."""
    n = len(words)
    if n == 0 or len(tokens) < n:
        return 0
    found = 0
    for at in range(len(tokens) - n + 1):
        if tokens[at : at + n - 1] != list(words[:-1]):
            continue
        last = tokens[at + n - 1]
        if last == words[-1] or (prefix and last.startswith(words[-1])):
            found += 1
    return found
