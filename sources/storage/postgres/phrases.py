"""A phrase's hits in the PostgreSQL store, from the places its words' postings keep.

FTS5 counts a phrase's instances in each column (the places keep the columns apart). A phrase is
found in its words' blocks as arrays (`phrase_match.py`): all of them when its rarest word is
common, else the rarest word's and the other words' blocks that can hold its chunks; a phrase
ending in a prefix, in the places of every lexeme that prefix starts, in the chunks of its rarest
whole word. A sample reads the newest chunks only, window by window back in time
(`NewestPhrase`). Exact either way, and never the chunks' text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...search.query import TOP, Term
from ...search.stemming import stems
from .postings.common_words import MIN_DOCS, CommonWords, kept_window
from .postings.kept_word import Word
from .postings.phrase_match import EVERY, PREFIXED, Hit, read_phrase, read_window, rows_as, starts, within

DOCS_SQL = """SELECT lexeme, docs FROM pg_term_docs
    WHERE user_id = %(user)s AND source = %(source)s AND lexeme = ANY(%(lexemes)s::text[])"""

FIRST_PER_HIT = 64
"""A sampled phrase whose rarest word is not kept reads this many of that word's chunks per hit
wanted in its first window (`NewestPhrase`), where windows of as many chunks as hits then four
or eight times more took 3–5 statements for a phrase of a common word that is rare next to it
("the naix": 30, 149, 548 and 2,611 chunks)."""


@dataclass(frozen=True)
class PhraseHits:
    """The chunks a phrase occurs in: (chunk, item, count in title, count in body, tokens)."""

    chunks: list[tuple[int, int, int, int, int]]


async def phrase_hits(
    conn: Any,
    source: str,
    user_id: str,
    terms: list[Term],
    known: dict[str, int] | None = None,
    kept: CommonWords | None = None,
    generation: int | None = None,
) -> list[PhraseHits]:
    """Each phrase's hits among `user_id`'s chunks of `source`. `known`: the chunk counts of
    (at least) the phrases' words, read already (a word missing there is in no chunk). With
    `kept` (the process's `CommonWords`) and the source's `generation` in the snapshot `conn`
    reads, the words in `kept.min_docs` chunks or more are taken from memory (read whole once)."""
    kept = kept if generation is not None else None
    return [await _hits(conn, source, user_id, term, known, kept, generation or 0) for term in terms]


async def _hits(
    conn: Any,
    source: str,
    user_id: str,
    term: Term,
    known: dict[str, int] | None,
    kept: CommonWords | None,
    generation: int,
) -> PhraseHits:
    words = stems(term.words)
    whole = words[:-1] if term.prefix else words
    prefix = (words[-1], words[-1] + TOP) if term.prefix else None
    params = {"user": user_id, "source": source, "lexemes": sorted(set(whole))}
    if known is None:
        docs = dict(await rows_as(conn, user_id, DOCS_SQL, params))
    else:
        docs = {lexeme: known[lexeme] for lexeme in params["lexemes"] if lexeme in known}
    if len(docs) < len(params["lexemes"]):
        return PhraseHits([])  # a word no chunk holds
    lexemes = sorted(docs, key=lambda lexeme: (docs[lexeme], lexeme))
    common = {} if kept is None else await kept.words(conn, user_id, source, lexemes, docs, generation)
    by_word = await read_phrase(conn, user_id, source, lexemes, prefix=prefix, kept=common)
    return PhraseHits(starts([*whole, PREFIXED] if prefix else words, by_word, lexemes[0]))


class NewestPhrase:
    """A phrase of whole words' hits, newest first, read in windows of its rarest word's chunks
    that go back in time: each window reads only blocks older than the last (a word's blocks
    hold disjoint chunk ranges), and is sized from the share of chunks that held the phrase so
    far. A sample of a phrase of common words reads its newest chunks, not all. With `kept` (the
    process's `CommonWords`) and the source's `generation`, its words in `kept.min_docs` chunks
    or more are read whole once and their windows cut in memory."""

    def __init__(
        self,
        user_id: str,
        source: str,
        term: Term,
        docs: dict[str, int] | None = None,
        kept: CommonWords | None = None,
        generation: int | None = None,
    ) -> None:
        self.user_id, self.source = user_id, source
        self.words = stems(term.words)
        self.docs = docs
        """The words' chunk counts when read already (`bm25.Known`); else read at the first window."""
        self.kept = kept if generation is not None else None
        self.generation = generation or 0
        self.hits: list[Hit] = []
        self.until = EVERY
        self.read = 0
        """Chunks of the rarest word read so far."""
        self.everything = False
        self._lexemes: list[str] | None = None
        self._common: dict[str, Word] = {}
        self._docs: dict[str, int] = {}

    async def at_least(self, conn: Any, enough: int) -> tuple[PhraseHits, bool]:
        """The hits read so far, at least `enough` of them when the phrase has that many, newest
        first; and whether they are all its hits."""
        if self._lexemes is None:
            await self._start(conn)
        window = self._first_window(enough)
        while not self.everything and len(self.hits) < enough:
            if self.hits:  # as many chunks again as the hits still missing need, at the rate so far
                window = max(window, -(-(enough - len(self.hits)) * self.read * 5 // (4 * len(self.hits))))
            await self._window(conn, window)
            window *= 4 if self.hits else 8  # no hit yet: the rate is not known
        return PhraseHits(sorted(self.hits, reverse=True)), self.everything

    def _first_window(self, enough: int) -> int:
        """`enough` chunks, or `FIRST_PER_HIT` per hit wanted when the rarest word is not kept and
        in fewer than `MIN_DOCS` chunks (each window is a statement): all its chunks when that is
        half of them or more."""
        window = max(1, enough)
        if self.everything or not self._lexemes or self._lexemes[0] in self._common:
            return window
        rarest = self._docs.get(self._lexemes[0], 0)
        if rarest >= (self.kept.min_docs if self.kept is not None else MIN_DOCS):
            return window  # as common as the words kept: the phrase is likely in its newest chunks
        wide = window * FIRST_PER_HIT
        return max(window, rarest if 2 * wide >= rarest else wide)

    async def _start(self, conn: Any) -> None:
        """The words' counts (read unless known), rarest first, and the common ones kept."""
        params = {"user": self.user_id, "source": self.source, "lexemes": sorted(set(self.words))}
        if self.docs is None:
            docs = dict(await rows_as(conn, self.user_id, DOCS_SQL, params))
        else:
            docs = {lexeme: self.docs[lexeme] for lexeme in params["lexemes"] if lexeme in self.docs}
        self._docs = docs
        self._lexemes = sorted(docs, key=lambda lexeme: (docs[lexeme], lexeme))
        self.everything = len(docs) < len(params["lexemes"])  # a word no chunk holds
        if self.kept is not None and not self.everything:
            self._common = await self.kept.words(
                conn, self.user_id, self.source, self._lexemes, docs, self.generation
            )

    async def _window(self, conn: Any, window: int) -> None:
        """The hits in the newest `window` chunks of the rarest word older than those read."""
        assert self._lexemes is not None
        lexemes, common = self._lexemes, self._common
        rows_of = lexemes[0]
        if lexemes[0] in common:  # the others are as common
            read = kept_window(common, lexemes, window, self.until)
        else:  # a hit's item and length from a kept word when there is one, not read with the rarest's
            rest = [lexeme for lexeme in lexemes if lexeme not in common]
            rows_of = next(iter(common), lexemes[0])
            user, source, until = self.user_id, self.source, self.until
            read = await read_window(conn, user, source, rest, window, until, rows_of == lexemes[0])
            near = read.by_word[lexemes[0]].chunks
            for lexeme, word in common.items():
                read.by_word[lexeme] = word.postings(read.since, until, lexeme == rows_of, near)
        self.hits += within(starts(self.words, read.by_word, rows_of), read.since, self.until)
        self.read += read.read
        self.until, self.everything = read.since, read.everything
