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
        array_send(chunks), array_send(items), array_send(dls), array_send(tf_titles),
        array_send(tf_bodies), places
    FROM {postings} WHERE source = %(source)s AND lexeme = %(lexeme)s ORDER BY block"""
"""Every block of a word, in chunk order (a word's blocks hold disjoint, ascending chunk
ranges), each with the source's generation (the same snapshot); each array in PostgreSQL's
binary form (`sent`), which costs the server and the client about a third less than one text
each (`docs/postgresql.md`)."""
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


SENT_HEAD = 20
"""The bytes before a one-dimensional array's elements in its binary form (`array_send`):
dimensions, whether it has nulls, the element type, then the dimension's size and lower bound."""
BIGINT, INTEGER = np.dtype([("size", ">i4"), ("value", ">i8")]), np.dtype([("size", ">i4"), ("value", ">i4")])
"""An element of a bigint or integer array as sent: its size in bytes, then its value."""


def sent(parts: list[bytes], element: np.dtype[Any]) -> np.ndarray:
    """The elements of arrays in binary form (`array_send`; without nulls), end to end, as int64."""
    body = b"".join(memoryview(p)[SENT_HEAD:] for p in parts if len(p) > SENT_HEAD)
    values = np.frombuffer(body, dtype=element)
    if len(body) % element.itemsize or (values["size"] != element["value"].itemsize).any():
        raise ValueError("a posting array was not read as expected")
    return values["value"].astype(np.int64)


CHUNK_MOST = np.iinfo(np.int32).max
"""A word whose chunks are all below it keeps them as int32 (`Word.chunks`)."""


def _narrow(values: np.ndarray, *dtypes: type[np.integer[Any]]) -> np.ndarray:
    """`values` (int64, none negative) in the first of `dtypes` that holds them all, else as
    they are."""
    top = int(values.max()) if len(values) else 0
    for dtype in dtypes:
        if top <= np.iinfo(dtype).max:
            return values.astype(dtype)
    return values


ANCHOR = 64
"""`Ascending` keeps every ANCHOR-th number whole."""


class Ascending:
    """Ascending (non-decreasing, none negative) numbers as every `ANCHOR`-th one (int64) and
    each one's distance from it (uint16) when every distance fits, else as they are (int32 when
    they fit): two bytes a number, read back with one addition."""

    def __init__(self, values: np.ndarray) -> None:
        anchors = values[::ANCHOR].copy()
        apart = values - np.repeat(anchors, ANCHOR)[: len(values)]
        narrow = len(values) == 0 or int(apart.max()) <= np.iinfo(np.uint16).max
        self.anchors = anchors if narrow else anchors[:0]
        self.apart = apart.astype(np.uint16) if narrow else _narrow(values, np.int32)
        self.narrow = narrow

    def __len__(self) -> int:
        return len(self.apart)

    def __getitem__(self, at: slice | np.ndarray) -> np.ndarray:
        """The numbers at `at` (a slice of step 1, or positions), as int64."""
        if not self.narrow:
            return self.apart[at].astype(np.int64)
        where = np.arange(at.start, at.stop) if isinstance(at, slice) else at
        found: np.ndarray = self.anchors[where // ANCHOR] + self.apart[at]
        return found

    def one(self, at: int) -> int:
        """The number at `at`."""
        base = int(self.anchors[at // ANCHOR]) if self.narrow else 0
        return base + int(self.apart[at])

    @property
    def nbytes(self) -> int:
        return int(self.anchors.nbytes + self.apart.nbytes)


@dataclass(frozen=True)
class Word:
    """A word's postings in a source, each array in the narrowest type that holds it: per posting
    its chunk (ascending; int32 when all are below `CHUNK_MOST`), item (`Ascending`) and length,
    and where its places start in `numbers` (`Ascending`, one more at the end); per posting and
    column (the title, then the body), how many places it has there (`lengths`); the places
    (`numbers`: uint16 when narrow). A place's key (`chunk << 32`, plus BODY in the body, plus
    the place) is made when a window is cut, not kept. About 12 bytes a posting and 2 a place,
    where int64 arrays and kept keys took 64 and 2: every common word of both large sources of
    the bench at 100k chunks fits the budget together (`docs/postgresql.md`)."""

    chunks: np.ndarray
    items: Ascending
    dls: np.ndarray
    starts: Ascending
    lengths: np.ndarray
    numbers: np.ndarray

    @staticmethod
    def of(rows: list[tuple[Any, ...]]) -> Word:
        """From `WORD_SQL`'s rows (without the generation)."""
        chunks = sent([r[0] for r in rows], BIGINT)
        titles, bodies = sent([r[3] for r in rows], INTEGER), sent([r[4] for r in rows], INTEGER)
        starts = np.zeros(len(chunks) + 1, dtype=np.int64)
        np.cumsum(titles + bodies, out=starts[1:])
        numbers = positions.numbers([bytes(r[5]) for r in rows])
        if len(numbers) != int(starts[-1]):
            raise ValueError("posting blocks' places do not match their counts")
        lengths = np.column_stack((titles, bodies)).ravel()
        items, dls = sent([r[1] for r in rows], BIGINT), sent([r[2] for r in rows], INTEGER)
        return Word(
            chunks.astype(np.int32) if len(chunks) == 0 or int(chunks[-1]) < CHUNK_MOST else chunks,
            Ascending(items),
            _narrow(dls, np.uint16, np.int32),
            Ascending(starts),
            _narrow(lengths, np.uint8, np.uint16, np.int32),
            _narrow(numbers, np.uint16, np.uint32),
        )

    @property
    def size(self) -> int:
        """Its arrays' bytes."""
        arrays = (self.chunks, self.items, self.dls, self.starts, self.lengths, self.numbers)
        return sum(a.nbytes for a in arrays)

    def _chunks(self, chunks: Any) -> np.ndarray:
        """`chunks` (ascending, none negative) as comparable with `self.chunks` without
        converting those: as int32 when they are, any chunk above theirs as `CHUNK_MOST`."""
        if self.chunks.dtype == np.int64:
            return np.asarray(chunks, dtype=np.int64)
        return np.minimum(np.asarray(chunks, dtype=np.int64), CHUNK_MOST).astype(np.int32)

    def older(self, until: int) -> int:
        """How many of its chunks are older (lower) than `until`."""
        return int(np.searchsorted(self.chunks, self._chunks([until])[0]))

    def postings(self, since: int, until: int, rows: bool = True, near: np.ndarray | None = None) -> Postings:
        """Its postings in chunks [since, until) as `phrase_match.read` gives them (without `rows`,
        no items and lengths). With `near` (a rarer word's chunks there, ascending), only in those
        when they are a small share (`_among`); else not cut to them: a key of a chunk without
        the rarer word starts no phrase and is the place of none (`phrase_match.starts`)."""
        low, high = (int(n) for n in np.searchsorted(self.chunks, self._chunks([since, until])))
        if near is not None and len(near) * NEAR_SHARE < high - low:
            return self._among(near, rows)
        numbers = self.numbers[self.starts.one(low) : self.starts.one(high)]
        return self._keyed(slice(low, high), self.lengths[2 * low : 2 * high], numbers, rows)

    def _among(self, near: np.ndarray, rows: bool) -> Postings:
        """Its postings in the chunks `near` (ascending) alone: only their places converted."""
        wanted = self._chunks(near)
        at = np.minimum(np.searchsorted(self.chunks, wanted), max(len(self.chunks) - 1, 0))
        mine = at[self.chunks[at] == wanted] if len(self.chunks) else at[:0]
        first = self.starts[mine]
        counts = self.starts[mine + 1] - first
        moved = first - (np.cumsum(counts) - counts)
        numbers = self.numbers[np.repeat(moved, counts) + np.arange(int(counts.sum()))]
        pairs = np.empty(2 * len(mine), dtype=np.int64)
        pairs[0::2], pairs[1::2] = 2 * mine, 2 * mine + 1
        return self._keyed(mine, self.lengths[pairs], numbers, rows)

    def _keyed(
        self, at: slice | np.ndarray, lengths: np.ndarray, numbers: np.ndarray, rows: bool
    ) -> Postings:
        """The postings at `at` (a slice, or positions ascending), with their `lengths` and
        places (`numbers`): each place's key is its chunk's base in its column plus the place."""
        chunks = self.chunks[at].astype(np.int64)
        owners = chunks.astype(np.uint64) << np.uint64(32)
        bases = np.empty(2 * len(chunks), dtype=np.uint64)
        bases[0::2], bases[1::2] = owners, owners + np.uint64(BODY)
        keys = np.repeat(bases, lengths)
        keys += numbers
        if not rows:
            return Postings(chunks, chunks[:0], chunks[:0], keys)
        return Postings(chunks, self.items[at], self.dls[at].astype(np.int64), keys)


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
