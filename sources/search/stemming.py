"""Which words of a text match the query, using SQLite's own porter tokenizer as the stemmer.

The index stems words (porter unicode61). To centre snippets and say which query terms a hit
matched, we stem the query's words and the hit's words the same way, on a private in-memory
FTS5 table, with a cache; this is much cheaper than asking FTS5 to highlight each hit again.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..storage.schema import TOKENIZER
from .query import ParsedQuery

_WORD = re.compile(r"[^\W_]+")
CACHE_SIZE = 200_000


class _Stemmer:
    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        # Contentless: the words' tokens are all it keeps, and `delete-all` empties it at once,
        # where a table with content deletes its rows one by one (a batch of new words cost half
        # as much again to take out as to put in).
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, content='', tokenize='{TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self._lock = threading.Lock()
        self._cache: dict[str, str] = {}

    @property
    def cache(self) -> dict[str, str]:
        """Each lowercased word seen so far and its stem."""
        return self._cache

    def stem(self, word: str) -> str:
        """One lowercased word's stem (a dictionary lookup once it has been seen)."""
        found = self._cache.get(word)
        return found if found is not None else self.stems([word])[0]

    def stems(self, words: Iterable[str]) -> list[str]:
        words = [w.lower() for w in words]
        cache = self._cache
        missing = [w for w in dict.fromkeys(words) if w not in cache]
        if missing:
            with self._lock:
                self._conn.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(missing, 1))
                found = dict(self._conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"))
                self._conn.execute("INSERT INTO t(t) VALUES ('delete-all')")
                if len(cache) > CACHE_SIZE:
                    cache.clear()
                for i, word in enumerate(missing, 1):
                    cache[word] = str(found.get(i, word))
        return [cache[w] for w in words]


_STEMMER = _Stemmer()


def stems(words: Iterable[str]) -> list[str]:
    return _STEMMER.stems(words)


@dataclass(slots=True)
class Matches:
    first: int | None
    terms: list[str]


class QueryMatcher:
    """Finds a parsed query's terms in texts, the way the index would match them."""

    def __init__(self, query: ParsedQuery) -> None:
        self.query = query
        self._term_stems = [stems(t.words) for t in query.terms]
        self._wanted = {
            s
            for term_stems, t in zip(self._term_stems, query.terms, strict=True)
            for s in (term_stems[:-1] if t.prefix else term_stems)
        }
        # A prefix as FTS5 reads it: its word stemmed by the same tokenizer (`shis*` is `shi*`),
        # matching the words whose stems start with it, as the index's terms do.
        self._prefixes = tuple(s[-1] for s, t in zip(self._term_stems, query.terms, strict=True) if t.prefix)
        # Porter only rewrites word endings, so a word can match only if it starts like a wanted
        # stem: checking the first three letters skips stemming almost every word of a text.
        self._heads = {s[:3] for s in self._wanted} | {p[:3] for p in self._prefixes}
        pairs = zip(self._term_stems, query.terms, strict=True)
        self._heads_of = {t.text: {s[:3] for s in term_stems} for term_stems, t in pairs}
        self._heads_by_terms: dict[tuple[str, ...], set[str]] = {}

    def _is_match(self, stem: str) -> bool:
        return stem in self._wanted or (bool(self._prefixes) and stem.startswith(self._prefixes))

    def _candidates(self, text: str, heads: Iterable[str] | None = None) -> list[tuple[int, str]]:
        """(position, lowercased word) of the words of `text` that start with a wanted head (or
        one of `heads`), in order.

        `str.find` per head runs in C over the text; only its hits are looked at in Python.
        """
        heads = self._heads if heads is None else heads
        lowered = text.lower()
        if len(lowered) != len(text):  # a character whose lowercase is longer: no positions
            return [(-1, m.group()) for m in _WORD.finditer(lowered) if m.group()[:3] in heads]
        out: dict[int, str] = {}
        for head in heads:
            at = lowered.find(head)
            while at >= 0:
                if at == 0 or not _is_word_char(lowered[at - 1]):
                    word = _WORD.match(lowered, at)
                    if word is not None:
                        out[at] = word.group()
                at = lowered.find(head, at + 1)
        return sorted(out.items())

    def _scan(self, text: str) -> list[tuple[int, str]]:
        if text.isascii():
            return self._candidates(text)
        folded = unicodedata.normalize("NFKC", text)
        found = self._candidates(folded)
        # Positions in the normalized text are no positions in `text` if its length changed.
        return found if len(folded) == len(text) else [(-1, w) for _, w in found]

    def first_match(self, text: str, terms: Iterable[str] | None = None) -> int | None:
        """Where the first word of `text` matching a query term starts (None: none, or no
        position survives Unicode folding); `terms` (query term texts, as `Matches.terms`)
        narrows the search to the terms the text is known to contain."""
        return self.first_matches([(text, terms)])[0]

    def first_matches(self, texts: Sequence[tuple[str, Iterable[str] | None]]) -> list[int | None]:
        """`first_match` for many (text, terms) pairs: the words not stemmed before, of all the
        texts, are stemmed at once (one statement, not one per word)."""
        looked = [self._first_known(text, terms) for text, terms in texts]
        missing = [w for _, unknown in looked for _, w in unknown]
        if not missing:  # every word looked at had a known stem: each first is final
            return [first for first, _ in looked]
        stem_of = dict(zip(*_stemmed(missing), strict=True))
        firsts: list[int | None] = []
        for first, unknown in looked:
            at = next((at for at, w in unknown if self._is_match(stem_of[w])), None)
            firsts.append(first if at is None or (first is not None and first < at) else at)
        return firsts

    def _heads_for(self, terms: Iterable[str] | None) -> Iterable[str]:
        """The heads of `terms` (None: of every query term), made once per set of terms (the
        hits of a page match a few sets of them)."""
        if terms is None:
            return self._heads
        key = tuple(terms)
        heads = self._heads_by_terms.get(key)
        if heads is None:
            heads = self._heads_by_terms[key] = {h for t in key for h in self._heads_of.get(t, ())}
        return heads

    def _first_known(
        self, text: str, terms: Iterable[str] | None
    ) -> tuple[int | None, list[tuple[int, str]]]:
        """The first match in `text` among the words whose stem is known, and the words before it
        whose stem is not (position, word; in order), each head's search stopping at its first
        match. No match and no words when no position survives Unicode folding."""
        heads = self._heads_for(terms)
        if not text.isascii():
            folded = unicodedata.normalize("NFKC", text)
            if len(folded) != len(text):
                return None, []
            text = folded
        lowered = text.lower()
        if len(lowered) != len(text):
            return None, []
        first: int | None = None
        unknown: list[tuple[int, str]] = []
        known, find, word_at = _STEMMER.cache.get, lowered.find, _WORD.match
        for head in heads:
            # only where this head would start before the first match found so far
            end = len(lowered) if first is None else first + len(head) - 1
            at = find(head, 0, end)
            while at >= 0:
                if at == 0 or not _is_word_char(lowered[at - 1]):
                    word = word_at(lowered, at)
                    if word is not None:
                        stem = known(w := word.group())
                        if stem is None:
                            unknown.append((at, w))
                        elif self._is_match(stem):
                            first = at
                            break
                at = find(head, at + 1, end)
        if not unknown:
            return first, unknown
        return first, sorted(u for u in unknown if first is None or u[0] < first)

    def find(self, *texts: str) -> Matches:
        """Position of the first match in the first text, and the query terms found in any text."""
        return self.find_all([texts])[0]

    def find_all(self, groups: list[tuple[str, ...]]) -> list[Matches]:
        """`find` for many groups of texts, stemming all their candidate words at once."""
        scanned = [[self._scan(t) for t in texts] for texts in groups]
        words = (w for group in scanned for cands in group for _, w in cands)
        stem_of = dict(zip(*_stemmed(words), strict=True))
        return [self._matches(group, stem_of) for group in scanned]

    def _matches(self, group: list[list[tuple[int, str]]], stem_of: dict[str, str]) -> Matches:
        found: set[str] = set()
        first: int | None = None
        for n, candidates in enumerate(group):
            for at, word in candidates:
                stem = stem_of[word]
                if self._is_match(stem):
                    found.add(stem)
                    for prefix in self._prefixes:
                        if stem.startswith(prefix):
                            found.add(prefix + "*")
                    if first is None and n == 0 and at >= 0:
                        first = at
        terms = []
        for term, term_stems in zip(self.query.terms, self._term_stems, strict=True):
            whole = term_stems[:-1] if term.prefix else term_stems
            if all(s in found for s in whole) and (not term.prefix or term_stems[-1] + "*" in found):
                terms.append(term.text)
        return Matches(first, terms)


def _stemmed(words: Iterable[str]) -> tuple[list[str], list[str]]:
    """The distinct `words` and their stems, in one batch."""
    distinct = list(dict.fromkeys(words))
    return distinct, stems(distinct)


def _is_word_char(char: str) -> bool:
    return char.isalnum()
