"""A source's common words' postings kept in memory, for phrases (`phrases.NewestPhrase`).

A phrase of common words (`"the of"`, `"the naix"`) is looked for in windows of its rarest word's
chunks (`phrase_match.read_window`); each window read the other words' blocks that hold one of
those chunks: for a word in most chunks, nearly all of its blocks. Profiled at 100k chunks
(notes), most of such a phrase's time was the server turning those blocks' chunk and count arrays
into text and the client parsing them back, window after window, query after query, for the
same few dozen words. Here a word in at least `MIN_DOCS` chunks of a source is read once, whole
(its arrays and its places as numbers, `Word`), and kept per process within `BUDGET_MB`
together, the least recently used dropped first; a window of it is then a slice of arrays.

A word is kept with the source's `generation` read in the same statement (moved by every write
transaction, `writing.LOCK_STATS_SQL`); it is used only while the plan's statistics, read at the
start of each search, report that same generation, so a search never reads a word older than the
database.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from loguru import logger

from ..pool import PgDatabase
from ..schema import on_postings
from . import positions
from .phrase_match import BODY, Postings, Window, rows_as

MIN_DOCS = 8_192
"""Words in at least this many chunks of a source (64 full blocks) are read whole and kept: a rarer
word's windows read few blocks."""
NEAR_SHARE = 4
"""A word's postings are cut to a rarer word's chunks when those are under a quarter of them."""
BUDGET_MB = 64
"""What the kept words of one process hold together at most, in MB (`Word.size`)."""
CACHE = "common_words"
"""The `PgDatabase.caches` key of the process's `CommonWords`."""
WORD_SQL = """SELECT
        (SELECT generation FROM pg_corpus_stats WHERE user_id = %(user)s AND source = %(source)s),
        array_to_string(chunks, ','), array_to_string(items, ','), array_to_string(dls, ','),
        array_to_string(tf_titles, ','), array_to_string(tf_bodies, ','), places
    FROM {postings} WHERE source = %(source)s AND lexeme = %(lexeme)s ORDER BY block"""
"""Every block of a word, in chunk order (a word's blocks hold disjoint, ascending chunk
ranges), each with the source's generation (the same snapshot); read in binary (the places)."""
AHEAD_SHARE = 2
"""A source's words read ahead (`CommonWords.read_ahead`) fill at most this share of the budget
(1/2): a second large source's still fit beside them."""
AHEAD_MOST = 64
"""At most this many words of a source are read ahead."""
AHEAD_SQL = """SELECT set_config('knowledge.user_id', %(user)s, true),
    ARRAY(SELECT lexeme FROM pg_term_docs WHERE user_id = %(user)s AND source = %(source)s
        AND docs >= %(min_docs)s ORDER BY docs DESC, lexeme LIMIT %(most)s)"""
"""The user (`schema.as_user`) and the source's common words, the most common first."""
BEGIN_SQL = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"


def _ints(parts: list[str]) -> np.ndarray:
    text = ",".join(p for p in parts if p)
    if not text:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(np.fromstring(text, dtype=np.int64, sep=","), dtype=np.int64)


@dataclass(frozen=True)
class Word:
    """A word's postings in a source: per posting its chunk (ascending), item and length, and
    where its places start in `numbers` (one more at the end); per posting and column (the title,
    then the body), the key its places are added to (`chunk << 32`, plus BODY in the body) and
    how many places it has there."""

    chunks: np.ndarray
    items: np.ndarray
    dls: np.ndarray
    starts: np.ndarray
    bases: np.ndarray
    lengths: np.ndarray
    numbers: np.ndarray

    @staticmethod
    def of(rows: list[tuple[Any, ...]]) -> Word:
        """From `WORD_SQL`'s rows (without the generation)."""
        chunks = _ints([r[0] for r in rows])
        titles, bodies = _ints([r[3] for r in rows]), _ints([r[4] for r in rows])
        starts = np.zeros(len(chunks) + 1, dtype=np.int64)
        np.cumsum(titles + bodies, out=starts[1:])
        numbers = positions.numbers([bytes(r[5]) for r in rows])
        if len(numbers) != int(starts[-1]):
            raise ValueError("posting blocks' places do not match their counts")
        owners = chunks << 32
        bases = np.column_stack((owners, owners + BODY)).ravel()
        lengths = np.column_stack((titles, bodies)).ravel()
        items, dls = _ints([r[1] for r in rows]), _ints([r[2] for r in rows])
        return Word(chunks, items, dls, starts, bases, lengths, numbers)

    @property
    def size(self) -> int:
        """Its arrays' bytes."""
        arrays = (self.chunks, self.items, self.dls, self.starts, self.bases, self.lengths, self.numbers)
        return sum(a.nbytes for a in arrays)

    def older(self, until: int) -> int:
        """How many of its chunks are older (lower) than `until`."""
        return int(np.searchsorted(self.chunks, until))

    def postings(self, since: int, until: int, rows: bool = True, near: np.ndarray | None = None) -> Postings:
        """Its postings in chunks [since, until) as `phrase_match.read` gives them (without `rows`,
        no items and lengths). With `near` (a rarer word's chunks there, ascending), only in those
        when they are a small share (`_among`); else not cut to them: a key of a chunk without
        the rarer word starts no phrase and is the place of none (`phrase_match.starts`)."""
        low, high = (int(n) for n in np.searchsorted(self.chunks, [since, until]))
        if near is not None and len(near) * NEAR_SHARE < high - low:
            return self._among(near, rows)
        numbers = self.numbers[self.starts[low] : self.starts[high]]
        keys = np.repeat(self.bases[2 * low : 2 * high], self.lengths[2 * low : 2 * high])
        keys += numbers
        chunks = self.chunks[low:high]
        if not rows:
            return Postings(chunks, chunks[:0], chunks[:0], keys.astype(np.uint64))
        return Postings(chunks, self.items[low:high], self.dls[low:high], keys.astype(np.uint64))

    def _among(self, near: np.ndarray, rows: bool) -> Postings:
        """Its postings in the chunks `near` (ascending) alone: only their places converted."""
        at = np.minimum(np.searchsorted(self.chunks, near), max(len(self.chunks) - 1, 0))
        mine = at[self.chunks[at] == near] if len(self.chunks) else at[:0]
        counts = self.starts[mine + 1] - self.starts[mine]
        moved = self.starts[mine] - (np.cumsum(counts) - counts)
        numbers = self.numbers[np.repeat(moved, counts) + np.arange(int(counts.sum()))]
        pairs = np.column_stack((2 * mine, 2 * mine + 1)).ravel()
        keys = np.repeat(self.bases[pairs], self.lengths[pairs])
        keys += numbers
        chunks = self.chunks[mine]
        if not rows:
            return Postings(chunks, chunks[:0], chunks[:0], keys.astype(np.uint64))
        return Postings(chunks, self.items[mine], self.dls[mine], keys.astype(np.uint64))


Key = tuple[str, str, str]


class CommonWords:
    """The kept words of a process: (user, source, lexeme) → (generation, `Word`), least
    recently used first, within `budget` bytes together; words in `min_docs` chunks or more."""

    def __init__(self, budget_mb: float = BUDGET_MB, min_docs: int = MIN_DOCS) -> None:
        self.budget = int(budget_mb * 1024 * 1024)
        self.min_docs = min_docs
        """Words in fewer chunks are read by window from the postings, not kept."""
        self._words: OrderedDict[Key, tuple[int, Word]] = OrderedDict()
        self._size = 0
        self.ahead: dict[tuple[str, str], int] = {}
        """Each (user, source) whose words were read ahead, and the generation it was asked at."""
        self.task: asyncio.Task[None] | None = None
        """The running read ahead (one at a time in the process)."""

    async def word(self, conn: Any, user_id: str, source: str, lexeme: str, generation: int) -> Word:
        """The word's postings at `generation`: kept, else read (on `conn`, a transaction as the
        user) and kept when they fit."""
        key = (user_id, source, lexeme)
        kept = self._words.get(key)
        if kept is not None and kept[0] == generation:
            self._words.move_to_end(key)
            return kept[1]
        params = {"user": user_id, "source": source, "lexeme": lexeme}
        rows = await rows_as(conn, user_id, on_postings(WORD_SQL, user_id), params)
        read_at, word = _read(rows)
        self._drop(key)
        if read_at is not None:
            self._keep(key, read_at, word)
        return word

    async def words(
        self, conn: Any, user_id: str, source: str, lexemes: list[str], docs: dict[str, int], generation: int
    ) -> dict[str, Word]:
        """Those of `lexemes` in `min_docs` chunks or more (`docs`: their chunk counts), in that
        order, each as `word` gives it."""
        common = (lexeme for lexeme in lexemes if docs[lexeme] >= self.min_docs)
        return {lexeme: await self.word(conn, user_id, source, lexeme, generation) for lexeme in common}

    def _keep(self, key: Key, read_at: int, word: Word) -> None:
        """Keep `word` (read at generation `read_at`) when it fits, dropping the least recently used."""
        if word.size > self.budget:
            return
        self._words[key] = (read_at, word)
        self._size += word.size
        while self._size > self.budget:
            self._drop(next(iter(self._words)))

    def read_ahead(self, pg: PgDatabase, user_id: str, source: str, generation: int) -> None:
        """Start reading `source`'s most common words in the background (once a generation, one
        source at a time), as the memory copies of small sources are built: a search meanwhile
        reads a word it needs itself. Read in a worker thread on a connection of its own, in one
        snapshot, within `AHEAD_SHARE` of the budget."""
        key = (user_id, source)
        if self.task is not None or self.ahead.get(key) == generation or self.budget <= 0:
            return
        self.ahead[key] = generation
        self.task = asyncio.get_running_loop().create_task(self._ahead(pg.url, user_id, source))

    async def _ahead(self, url: str, user_id: str, source: str) -> None:
        try:
            share = self.budget // AHEAD_SHARE
            read_at, words = await asyncio.to_thread(_read_ahead, url, user_id, source, self.min_docs, share)
            for lexeme, word in words:
                key = (user_id, source, lexeme)
                known = self._words.get(key)
                if read_at is not None and (known is None or known[0] < read_at):  # unless read since
                    self._drop(key)
                    self._keep(key, read_at, word)
        except Exception as error:  # without them, a search reads the words it needs
            logger.warning("common words of {} not read ahead: {}", source, type(error).__name__)
        finally:
            self.task = None

    async def wait(self) -> None:
        """Until the running read ahead (if any) is done."""
        if self.task is not None:
            await asyncio.shield(self.task)

    def _drop(self, key: Key) -> None:
        kept = self._words.pop(key, None)
        if kept is not None:
            self._size -= kept[1].size

    @property
    def size(self) -> int:
        """The kept words' bytes together."""
        return self._size


def _read_ahead(
    url: str, user_id: str, source: str, min_docs: int, budget: int
) -> tuple[int | None, list[tuple[str, Word]]]:
    """The source's generation and its most common words (in `min_docs` chunks or more) that fit
    in `budget` bytes together, read in one snapshot."""
    words: list[tuple[str, Word]] = []
    size, read_at = 0, None
    params: dict[str, Any] = {"user": user_id, "source": source, "min_docs": min_docs, "most": AHEAD_MOST}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(BEGIN_SQL)
        [(_, lexemes)] = conn.execute(AHEAD_SQL, params).fetchall()
        for lexeme in lexemes:
            sql = on_postings(WORD_SQL, user_id)
            rows = conn.execute(sql, params | {"lexeme": lexeme}, binary=True).fetchall()  # type: ignore[call-overload]
            at, word = _read(rows)
            if at is None or size + word.size > budget:
                break
            words.append((str(lexeme), word))
            size, read_at = size + word.size, at
        conn.execute("COMMIT")
    return read_at, words


def _read(rows: list[Any]) -> tuple[int | None, Word]:
    """`WORD_SQL`'s rows as the generation they were read at (None: no statistics row) and the
    word."""
    read_at = int(rows[0][0]) if rows and rows[0][0] is not None else None
    return read_at, Word.of([tuple(r[1:]) for r in rows])


def kept_window(words: dict[str, Word], lexemes: list[str], window: int, until: int) -> Window:
    """`phrase_match.read_window` of words all kept here (`lexemes`, rarest first): the rarest
    word's newest `window` chunks older than `until`, the others' postings in those chunks."""
    rarest = words[lexemes[0]]
    high = rarest.older(until)
    low = max(0, high - window)
    since = 0 if low == 0 else int(rarest.chunks[low])
    found = {lexemes[0]: rarest.postings(since, until)}
    near = found[lexemes[0]].chunks
    found |= {lexeme: words[lexeme].postings(since, until, False, near) for lexeme in lexemes[1:]}
    return Window(found, since, high - low, low == 0)


def common_words(pg: PgDatabase) -> CommonWords:
    """The process's kept words for the database `pg` (made on first use)."""
    kept: CommonWords = pg.caches.setdefault(CACHE, CommonWords())
    return kept
