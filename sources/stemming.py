"""Which query terms a hit matched, using SQLite's own porter tokenizer as the stemmer.

The index stems words (porter unicode61); to say which query terms matched a chunk we stem
the query words and the words FTS5 highlighted the same way, on a private in-memory table.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable

from cachetools import LRUCache

from .query import ParsedQuery, words_of
from .schema import TOKENIZER


class _Stemmer:
    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self._lock = threading.Lock()
        self._cache: LRUCache[str, str] = LRUCache(maxsize=50_000)

    def stems(self, words: Iterable[str]) -> list[str]:
        words = [w.lower() for w in words]
        missing = [w for w in dict.fromkeys(words) if w not in self._cache]
        if missing:
            with self._lock:
                self._conn.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(missing, 1))
                found = dict(self._conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"))
                self._conn.execute("DELETE FROM t")
            for i, word in enumerate(missing, 1):
                self._cache[word] = str(found.get(i, word))
        return [self._cache[w] for w in words]


_STEMMER = _Stemmer()


def stems(words: Iterable[str]) -> list[str]:
    return _STEMMER.stems(words)


def matched_terms(query: ParsedQuery, highlighted: Iterable[str]) -> list[str]:
    """The query terms (as the user wrote them, minus quotes) found among highlighted words."""
    found = set(stems(w for h in highlighted for w in words_of(h)))
    result: list[str] = []
    for term in query.terms:
        term_stems = stems(term.words)
        if term.prefix:
            *whole, last = term_stems
            hit = all(s in found for s in whole) and any(f.startswith(term.words[-1]) for f in found)
        else:
            hit = all(s in found for s in term_stems)
        if hit:
            result.append(term.text)
    return result
