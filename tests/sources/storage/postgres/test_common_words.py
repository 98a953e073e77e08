"""A source's common words kept in memory (`common_words.py`) find a phrase where its posting
blocks find it: the same postings over any chunk range (pure), the same newest hits window by
window, and the same pages as SQLite's FTS5 on the bench corpus; a write moves the generation
and the word is read again; the kept words stay within their budget."""

from __future__ import annotations

import asyncio
import random
import struct
import threading
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from knowledge_mcp.bench import loading
from knowledge_mcp.bench.corpus import CorpusStream
from knowledge_mcp.bench.postgres import writes
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.query import Term, parse_query
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.phrases import phrase_hits
from knowledge_mcp.sources.storage.postgres.pool import open_pg
from knowledge_mcp.sources.storage.postgres.postings.common_words import (
    AHEAD_MOST,
    AHEAD_SHARE,
    CACHE,
    CommonWords,
    _read_ahead,
    kept_window,
)
from knowledge_mcp.sources.storage.postgres.postings.kept_word import Word
from knowledge_mcp.sources.storage.postgres.postings.phrase_match import postings, starts, within
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS, as_user
from knowledge_mcp.sources.storage.postgres.store import PgStore
from knowledge_mcp.sources.storage.postgres.store.memory import CACHE as COPIES
from knowledge_mcp.sources.storage.postgres.store.memory import MemoryCopies, settled
from knowledge_mcp.sources.storage.postgres.tokens import index, phrase_starts
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore

from .test_phrase_match import WORDS, blocks, chunks

SIZE = 3000
USER = loading.USER
INT8, INT4 = 20, 23
"""The type ids of bigint and integer, as `array_send` writes them."""


def sent(text: str, oid: int) -> bytes:
    """An array given as "1,2,3" in PostgreSQL's binary form, as `array_send` gives it."""
    values = [int(v) for v in text.split(",")] if text else []
    if not values:
        return struct.pack(">iii", 0, 0, oid)
    form = ">iq" if oid == INT8 else ">ii"
    head = struct.pack(">iiiii", 1, 0, oid, len(values), 1)
    return head + b"".join(struct.pack(form, 8 if oid == INT8 else 4, v) for v in values)


def word_of(rows: list[tuple[str, str, str, str, str, bytes]]) -> Word:
    """A `Word` of blocks given as `phrase_match.BLOCKS_SQL` reads them (arrays as text)."""
    oids = (INT8, INT8, INT4, INT4, INT4)
    return Word.of([(*(sent(r[k], oid) for k, oid in enumerate(oids)), r[5]) for r in rows])


def test_a_kept_word_gives_the_postings_its_blocks_give_over_any_chunk_range() -> None:
    texts = chunks(11, 80)
    indexed = index(texts)
    ids = [5 + 2 * n for n in range(len(texts))]
    rng = random.Random(11)
    for word in WORDS:
        rows = blocks(indexed.postings[word], ids, size=8)
        kept, read = word_of(rows), postings(rows)
        for _ in range(20):
            since, until = sorted(rng.sample(range(ids[-1] + 3), 2))
            inside = (read.chunks >= since) & (read.chunks < until)
            part = kept.postings(since, until)
            assert list(part.chunks) == list(read.chunks[inside])
            assert list(part.items) == list(read.items[inside]) and list(part.dls) == list(read.dls[inside])
            owners = read.keys >> np.uint64(32)
            assert list(part.keys) == list(read.keys[(owners >= since) & (owners < until)])
            near = np.asarray(sorted(rng.sample(ids, 3)), dtype=np.int64)  # a rarer word's few chunks
            cut, reference = kept.postings(0, 2**62, False, near), postings(rows, near)
            assert list(cut.chunks) == list(reference.chunks) and list(cut.keys) == list(reference.keys)


def test_windows_of_kept_words_find_every_phrase_the_per_chunk_reference_finds() -> None:
    found = 0
    for seed in range(4):
        texts = chunks(seed, 70)
        indexed = index(texts)
        ids = [3 + 4 * n for n in range(len(texts))]
        words = {w: word_of(blocks(indexed.postings[w], ids, size=8)) for w in WORDS}
        places = {w: {c: {int(p) for p in t.split(",")} for c, _, _, t in indexed.postings[w]} for w in WORDS}
        rng = random.Random(seed)
        for _ in range(15):
            phrase = rng.choices(WORDS, k=rng.randint(2, 3))
            lexemes = sorted(set(phrase), key=lambda w: (len(words[w].chunks), w))
            expected = []
            for c in range(len(texts)):
                if all(c in places[w] for w in phrase):
                    in_title, in_body = phrase_starts([places[w][c] for w in phrase])
                    if in_title or in_body:
                        expected.append((ids[c], 1000 + ids[c], in_title, in_body, 10 + c))
            hits, until, everything = [], 2**62, False
            while not everything:  # windows of 7 chunks of the rarest word, back in time
                window = kept_window(words, lexemes, 7, until)
                hits += within(starts(phrase, window.by_word, lexemes[0]), window.since, until)
                until, everything = window.since, window.everything
            assert sorted(hits) == expected, phrase
            found += len(expected)
    assert found > 50


@pytest.fixture
async def loaded(pg_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """The bench corpus of SIZE chunks in PostgreSQL (memory copies off) and in SQLite."""
    await loading.load(CorpusStream(SIZE, 1), tmp_path)
    pg = await open_pg(pg_url)
    try:
        await migrate(pg, COMPONENT, MIGRATIONS)
        stream = CorpusStream(SIZE, 1)
        await writes.load(pg, USER, stream, True)
        pg.caches[COPIES] = MemoryCopies(max_chunks=0)
        yield pg, tmp_path, stream.corpus.queries
    finally:
        await pg.close()


@pytest.mark.anyio
@pytest.mark.parametrize("min_docs", [1, 40])
async def test_phrases_of_kept_words_give_the_page_fts5_gives_on_sqlite(loaded, min_docs: int) -> None:  # type: ignore[no-untyped-def]
    pg, folder, queries = loaded
    kept = pg.caches[CACHE] = CommonWords(min_docs=min_docs)  # 1: every word; 40: rare ones by window
    phrases = [q for kind, q in queries if kind == "phrase"]
    for name in ("notes", "media"):
        source = SOURCES[name]
        db = await open_database(database_path(folder, USER, name), source.migrations)
        db.memory_index_max_chunks = 0
        try:
            lite, store = SqliteStore(db, name), PgStore(pg, USER, name, folder)
            for query in phrases:
                ours = await source.search(store, SearchRequest(query, limit=10), Defaults())
                theirs = await source.search(lite, SearchRequest(query, limit=10), Defaults())
                assert [r.title for r in ours.results] == [r.title for r in theirs.results], query
        finally:
            await db.close()
    assert kept.size > 0  # the phrases' words were kept


GENERATION_SQL = "SELECT generation FROM pg_corpus_stats WHERE user_id = %s AND source = 'notes'"
MOVE_SQL = "UPDATE pg_corpus_stats SET generation = generation + 1 WHERE user_id = %s AND source = 'notes'"


@pytest.mark.anyio
async def test_a_kept_word_is_read_again_at_a_new_generation_and_kept_within_its_budget(loaded) -> None:  # type: ignore[no-untyped-def]
    pg, _, _ = loaded
    kept = CommonWords(min_docs=1)
    async with pg.transaction() as conn:
        await as_user(conn, USER)
        generation = int((await (await conn.execute(GENERATION_SQL, [USER])).fetchone())[0])
        first = await kept.word(conn, USER, "notes", "the", generation)
        assert await kept.word(conn, USER, "notes", "the", generation) is first
        assert kept.size == first.size and len(first.chunks) > 0
        await conn.execute(MOVE_SQL, [USER])  # as every write transaction does
        again = await kept.word(conn, USER, "notes", "the", generation + 1)
        assert again is not first and await kept.word(conn, USER, "notes", "the", generation + 1) is again
        assert list(again.chunks) == list(first.chunks) and kept.size == again.size
        small = CommonWords(budget_mb=2 * again.size / 2**20)
        for lexeme in ("the", "of", "and", "to", "is"):
            await small.word(conn, USER, "notes", lexeme, generation + 1)
            assert 0 < small.size <= small.budget
        tiny = CommonWords(budget_mb=again.size / 2**21)
        assert (await tiny.word(conn, USER, "notes", "the", generation + 1)).size == again.size
        assert tiny.size == 0  # larger than the budget: read, not kept


GENERATION_OF_SQL = "SELECT generation FROM pg_corpus_stats WHERE user_id = %s AND source = %s"


@pytest.mark.anyio
@pytest.mark.parametrize("min_docs", [1, 40])
async def test_a_phrase_counted_with_kept_words_has_the_hits_its_blocks_give(loaded, min_docs: int) -> None:  # type: ignore[no-untyped-def]
    pg, _, queries = loaded
    phrases = [parse_query(q).terms[0] for kind, q in queries if kind == "phrase"]
    terms = phrases + [Term(t.words, prefix=True) for t in phrases]  # the last word a prefix too
    kept = CommonWords(min_docs=min_docs)
    counted = 0
    async with pg.transaction() as conn:
        await as_user(conn, USER)
        for name in ("notes", "media"):
            generation = int((await (await conn.execute(GENERATION_OF_SQL, [USER, name])).fetchone())[0])
            ours = await phrase_hits(conn, name, USER, terms, None, kept, generation)
            theirs = await phrase_hits(conn, name, USER, terms)
            for term, mine, read in zip(terms, ours, theirs, strict=True):
                assert mine.chunks == read.chunks, term
                counted += len(read.chunks)
    assert counted > 100 and kept.size > 0


@pytest.mark.anyio
async def test_queries_of_several_phrases_give_the_same_page_with_words_kept_or_read(loaded) -> None:  # type: ignore[no-untyped-def]
    pg, folder, queries = loaded
    phrases = [q for kind, q in queries if kind == "phrase"]
    asked = [f"{a} {b}" for a, b in pairwise(phrases)][:20]
    rare = [q for kind, q in queries if kind == "rare"]
    asked += [f"{a} {b}" for a, b in zip(phrases, rare, strict=False)][:20]  # a phrase and a word
    pages: list[list[list[str]]] = []
    for min_docs in (1, 10**9):  # every word kept; none
        kept = pg.caches[CACHE] = CommonWords(min_docs=min_docs)
        store = PgStore(pg, USER, "notes", folder)
        found = [await SOURCES["notes"].search(store, SearchRequest(q, limit=10), Defaults()) for q in asked]
        pages.append([[r.title for r in page.results] for page in found])
        assert (kept.size > 0) == (min_docs == 1)
    assert pages[0] == pages[1]
    assert sum(len(page) for page in pages[0]) > 50


COMMON_SQL = """SELECT lexeme FROM pg_term_docs WHERE user_id = %s AND source = 'notes' AND docs >= 40
    ORDER BY docs DESC, lexeme"""


async def _is_kept(kept: CommonWords, lexeme: str, generation: int) -> bool:
    """Whether `kept` has the word at `generation` (it is then given without a statement)."""
    try:
        await kept.word(None, USER, "notes", lexeme, generation)
    except AttributeError:  # a statement on no connection: not kept
        return False
    return True


@pytest.mark.anyio
async def test_a_source_s_most_common_words_are_read_ahead_once_a_generation_within_their_share(
    loaded,
) -> None:  # type: ignore[no-untyped-def]
    pg, _, _ = loaded
    async with pg.transaction() as conn:
        await as_user(conn, USER)
        generation = int((await (await conn.execute(GENERATION_SQL, [USER])).fetchone())[0])
        common = [r[0] for r in await (await conn.execute(COMMON_SQL, [USER])).fetchall()]
        reference = await CommonWords(min_docs=40).word(conn, USER, "notes", common[0], generation)
    kept = CommonWords(min_docs=40)
    kept.read_ahead(pg, USER, "notes", generation)
    assert kept.task is not None
    await kept.wait()
    assert kept.task is None and 0 < kept.size <= kept.budget // AHEAD_SHARE
    assert len(common) > AHEAD_MOST
    assert all([await _is_kept(kept, lexeme, generation) for lexeme in common[:AHEAD_MOST]])
    assert not await _is_kept(kept, common[AHEAD_MOST], generation)
    first = await kept.word(None, USER, "notes", common[0], generation)
    assert list(first.chunks) == list(reference.chunks) and list(first.numbers) == list(reference.numbers)
    kept.read_ahead(pg, USER, "notes", generation)
    assert kept.task is None  # once a generation
    async with pg.transaction() as conn:
        await conn.execute(MOVE_SQL, [USER])  # as every write transaction does
    kept.read_ahead(pg, USER, "notes", generation + 1)
    await kept.wait()
    assert await _is_kept(kept, common[0], generation + 1)
    small = CommonWords(budget_mb=3 * reference.size / 2**20, min_docs=40)
    small.read_ahead(pg, USER, "notes", generation + 1)
    await small.wait()
    assert 0 < small.size <= small.budget // AHEAD_SHARE


BACKENDS_SQL = (
    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
)


async def _backends(url: str, at_most: int | None = None) -> int:
    """How many other client connections the server has; with `at_most`, asked again for up to
    5 s until they are no more (a server process ends a moment after its client closed)."""
    checker = await open_pg(url)
    try:
        for _ in range(50):
            row = await checker.fetchone(BACKENDS_SQL)
            assert row is not None
            if at_most is None or int(row["count"]) <= at_most:
                break
            await asyncio.sleep(0.1)
        return int(row["count"])
    finally:
        await checker.close()


@pytest.mark.anyio
async def test_closing_the_store_stops_a_running_read_ahead_and_waits_for_its_connection(
    loaded, pg_url: str
) -> None:  # type: ignore[no-untyped-def]
    pg, _, _ = loaded
    async with pg.transaction() as conn:
        generation = int((await (await conn.execute(GENERATION_SQL, [USER])).fetchone())[0])
    before = await _backends(pg_url)
    closing = await open_pg(pg_url)
    kept = closing.caches[CACHE] = CommonWords(min_docs=1)  # every word: a long read ahead
    kept.read_ahead(closing, USER, "notes", generation)
    task = kept.task
    assert task is not None and not task.done()
    await closing.close()
    assert task.done() and kept.task is None  # waited for, not left running
    assert await _backends(pg_url, before) <= before  # its connection closed with the pool's
    assert len(kept) < AHEAD_MOST  # stopped before reading every word it would have
    kept.read_ahead(closing, USER, "notes", generation + 1)
    assert kept.task is None  # closed: no read ahead starts


@pytest.mark.anyio
async def test_a_read_ahead_hands_on_each_word_as_read_and_once_stopped_reads_none(
    loaded, pg_url: str
) -> None:  # type: ignore[no-untyped-def]
    stop = threading.Event()
    stop.set()
    read_at, words = await asyncio.to_thread(_read_ahead, pg_url, USER, "notes", 1, 2**30, stop)
    assert words == [] and read_at is None
    handed: list[tuple[int, str, Word]] = []
    read_at, words = await asyncio.to_thread(
        _read_ahead, pg_url, USER, "notes", 1, 2**30, threading.Event(), lambda *word: handed.append(word)
    )
    assert read_at is not None and len(words) == AHEAD_MOST
    assert [(read_at, lexeme, word) for lexeme, word in words] == handed  # each handed on as read


@pytest.mark.anyio
async def test_a_settled_source_is_copied_when_small_and_has_its_common_words_read_when_large(loaded) -> None:  # type: ignore[no-untyped-def]
    pg, _, _ = loaded
    async with pg.transaction() as conn:
        await as_user(conn, USER)
        generation = int((await (await conn.execute(GENERATION_SQL, [USER])).fetchone())[0])
        common = [r[0] for r in await (await conn.execute(COMMON_SQL, [USER])).fetchall()]
    pg.caches[COPIES] = copies = MemoryCopies(max_chunks=SIZE // 10)  # notes too large to copy
    pg.caches[CACHE] = kept = CommonWords(min_docs=40)
    await settled(pg, (USER, "notes"), SOURCES["notes"].weights)
    assert kept.task is None and kept.ahead == {(USER, "notes"): generation}  # read, and done
    assert await _is_kept(kept, common[0], generation) and copies.get((USER, "notes")) is None
    await settled(pg, (USER, "characters"), SOURCES["characters"].weights)  # small enough to copy
    assert copies.get((USER, "characters")) is not None and (USER, "characters") not in kept.ahead
