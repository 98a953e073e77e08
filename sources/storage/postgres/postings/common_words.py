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
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import psycopg
from loguru import logger

from ..pool import PgDatabase
from ..schema import on_postings
from .kept_word import Word
from .phrase_match import Window, rows_as

MIN_DOCS = 8_192
"""Words in at least this many chunks of a source (64 full blocks) are read whole and kept: a rarer
word's windows read few blocks."""
BUDGET_MB = 64
"""What the kept words of one process hold together at most, in MB (`Word.size`)."""
CACHE = "common_words"
"""The `PgDatabase.caches` key of the process's `CommonWords`."""
WORD_SQL = """SELECT
        (SELECT generation FROM pg_corpus_stats WHERE user_id = %(user)s AND source = %(source)s),
        array_send(chunks), array_send(items), array_send(dls), array_send(tf_titles),
        array_send(tf_bodies), places
    FROM {postings} WHERE source = %(source)s AND lexeme = %(lexeme)s ORDER BY block"""
"""Every block of a word, in chunk order (a word's blocks hold disjoint, ascending chunk
ranges), each with the source's generation (the same snapshot); each array in PostgreSQL's
binary form (`kept_word.sent`), not as text: less for the server to write and the client to
parse (`docs/postgresql.md`, "Session 16")."""
AHEAD_SHARE = 2
"""A source's words read ahead (`CommonWords.read_ahead`) fill at most this share of the budget
(1/2): a second large source's still fit beside them."""
AHEAD_MOST = 128
"""At most this many words of a source are read ahead."""
AHEAD_SQL = """SELECT set_config('knowledge.user_id', %(user)s, true),
    ARRAY(SELECT lexeme FROM pg_term_docs WHERE user_id = %(user)s AND source = %(source)s
        AND docs >= %(min_docs)s ORDER BY docs DESC, lexeme LIMIT %(most)s)"""
"""The user (`schema.as_user`) and the source's common words, the most common first."""
BEGIN_SQL = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

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
        self._stop = threading.Event()
        """Set by `aclose`: a read ahead reads no further word."""

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
        if self._stop.is_set():  # closed
            return
        self.ahead[key] = generation
        self.task = asyncio.get_running_loop().create_task(self._ahead(pg.url, user_id, source))

    async def _ahead(self, url: str, user_id: str, source: str) -> None:
        loop = asyncio.get_running_loop()

        def each(read_at: int, lexeme: str, word: Word) -> None:  # in the thread: kept on the loop
            loop.call_soon_threadsafe(self._keep_ahead, (user_id, source, lexeme), read_at, word)

        try:
            share = self.budget // AHEAD_SHARE
            await asyncio.to_thread(_read_ahead, url, user_id, source, self.min_docs, share, self._stop, each)
        except Exception as error:  # without them, a search reads the words it needs
            logger.warning("common words of {} not read ahead: {}", source, type(error).__name__)
        finally:
            self.task = None

    def _keep_ahead(self, key: Key, read_at: int, word: Word) -> None:
        """Keep a word read ahead (at generation `read_at`) unless it was read since."""
        known = self._words.get(key)
        if known is None or known[0] < read_at:
            self._drop(key)
            self._keep(key, read_at, word)

    async def wait(self) -> None:
        """Until the running read ahead (if any) is done."""
        if self.task is not None:
            await asyncio.shield(self.task)

    async def aclose(self) -> None:
        """Stop reading ahead (for good) and wait until the running read ahead's thread has
        closed its connection (`PgDatabase.close`): it reads no further word."""
        self._stop.set()
        await self.wait()

    def _drop(self, key: Key) -> None:
        kept = self._words.pop(key, None)
        if kept is not None:
            self._size -= kept[1].size

    def __len__(self) -> int:
        """How many words are kept."""
        return len(self._words)

    @property
    def size(self) -> int:
        """The kept words' bytes together."""
        return self._size


def _read_ahead(
    url: str,
    user_id: str,
    source: str,
    min_docs: int,
    budget: int,
    stop: threading.Event,
    each: Callable[[int, str, Word], None] | None = None,
) -> tuple[int | None, list[tuple[str, Word]]]:
    """The source's generation and its most common words (in `min_docs` chunks or more) that fit
    in `budget` bytes together, read in one snapshot; none further once `stop` is set. Each word
    is also handed to `each` (its generation, lexeme and postings) as soon as it is read: a
    search can use the most common ones while the others are read."""
    words: list[tuple[str, Word]] = []
    size, read_at = 0, None
    params: dict[str, Any] = {"user": user_id, "source": source, "min_docs": min_docs, "most": AHEAD_MOST}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(BEGIN_SQL)
        [(_, lexemes)] = conn.execute(AHEAD_SQL, params).fetchall()
        for lexeme in lexemes:
            if stop.is_set():
                break
            sql = on_postings(WORD_SQL, user_id)
            rows = conn.execute(sql, params | {"lexeme": lexeme}, binary=True).fetchall()  # type: ignore[call-overload]
            at, word = _read(rows)
            if at is None or size + word.size > budget:
                break
            words.append((str(lexeme), word))
            size, read_at = size + word.size, at
            if each is not None:
                each(at, str(lexeme), word)
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
