"""A large source's search on PostgreSQL is two round trips for words, prefixes and a common word:
the statistics, then one statement that ranks (or samples) and returns the page's rows with every
column the describe stage reads (`store/planned.py`). Statements are counted, not timed."""

from __future__ import annotations

import math
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import pytest

from knowledge_mcp.bench.corpus import CorpusStream
from knowledge_mcp.bench.postgres import writes
from knowledge_mcp.sources.registry import SOURCES, get_source
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.postgres import bm25
from knowledge_mcp.sources.storage.postgres.embeddings import store as embeddings_store
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.prepared import marked
from knowledge_mcp.sources.storage.postgres.store import PgStore, stats
from knowledge_mcp.sources.storage.postgres.store.memory import CACHE, MemoryCopies
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter

from .conftest import record_statements

pytestmark = pytest.mark.anyio
SIZE = 3000
USER = "local"
SAMPLE_AND_PAGE = "WITH newest AS MATERIALIZED"
"""A common word's (or prefix's) sample read with its page's rows."""
CANDIDATES_IN_RANKING = "candidates AS MATERIALIZED"
"""The plan's candidate chunks picked in the ranking statement."""
FOLDS = (SAMPLE_AND_PAGE, CANDIDATES_IN_RANKING)
STATS = stats.STATS_SQL[:60]
STAMP = "2026-01-01T00:00:00+00:00"
WOMB, WOMBL = '"womb" *', '"wombl" *'
"""The FTS keys of `womb*` and `wombl*`."""
"""A source's statistics (`store/stats.py`), as `spelled` spells its EXECUTE."""


def spelled(sent: str) -> str:
    """`sent` with each prepared statement's EXECUTE followed by the statement it runs."""
    for name, sql in marked().items():
        sent = sent.replace(f"EXECUTE {name}", f"EXECUTE {name} {sql}")
    return sent


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement sent, each prepared statement's EXECUTE spelled out and a connection's one
    PREPARE of it left out (`prepared.py`), with the dense stage's coverage, once read, held for
    the whole test (it is read again after some seconds)."""
    monkeypatch.setattr(embeddings_store, "COVERAGE_TTL_S", math.inf)
    monkeypatch.setattr(embeddings_store, "BUILDING_TTL_S", math.inf)
    return record_statements(monkeypatch, lambda sent: None if sent.startswith("PREPARE ") else spelled(sent))


async def test_a_large_source_s_word_prefix_and_several_word_searches_are_two_round_trips(
    store: PgDatabase, statements: list[str], tmp_path: Path
) -> None:
    stream = CorpusStream(SIZE, 1)
    await writes.load(store, USER, stream, True)
    store.caches[CACHE] = MemoryCopies(max_chunks=0)  # every source ranked from the postings
    source, pg = SOURCES["notes"], PgStore(store, USER, "notes", tmp_path)
    queries = [(kind, q) for kind, q in stream.corpus.queries if kind != "phrase"]
    common = [q for kind, q in queries if kind == "common"]
    queries += [("mix", f"{a} {b}") for a, b in pairwise(common)]  # the newest candidates ranked
    await source.search(pg, SearchRequest(queries[0][1]), Defaults())  # the coverage row, once
    trips: Counter[int] = Counter()
    folded: Counter[str] = Counter()
    for _, query in queries:
        for offset in (0, 10):
            statements.clear()
            found = await source.search(pg, SearchRequest(query, limit=10, offset=offset), Defaults())
            trips[len(statements)] += 1
            folded.update(f for f in FOLDS if any(f in s for s in statements))
            assert found.results or offset, query
    assert folded[SAMPLE_AND_PAGE] and folded[CANDIDATES_IN_RANKING], folded
    assert trips == {2: 2 * len(queries)}  # none here needs a refill (a third: ranked again)


async def test_the_statistics_knowledge_search_read_for_a_source_are_not_read_again_by_its_search(
    store: PgDatabase, statements: list[str], tmp_path: Path
) -> None:
    stream = CorpusStream(500, 1)
    await writes.load(store, USER, stream, True)
    store.caches[CACHE] = MemoryCopies(max_chunks=0)
    source = SOURCES["notes"]

    def one_call() -> PgStore:  # a store serves one call
        return PgStore(store, USER, "notes", tmp_path)

    for query in (q for kind, q in stream.corpus.queries if kind == "rare"):
        if (await source.search(one_call(), SearchRequest(query), Defaults())).results:
            break  # a word found in notes (and the coverage row read)
    statements.clear()
    by_itself = await source.search(one_call(), SearchRequest(query), Defaults())
    searched_alone = len(statements)
    fanned = one_call()
    counts = await fanned.index_stats(parse_query(query))
    statements.clear()
    after_counts = await source.search(fanned, SearchRequest(query, index_stats=counts), Defaults())
    assert len(statements) == searched_alone - 1 == 1, statements
    assert after_counts.model_dump() == by_itself.model_dump()
    statements.clear()
    await source.search(fanned, SearchRequest(query), Defaults())  # counts are used once
    assert len(statements) == searched_alone


async def test_the_sources_of_a_knowledge_search_read_their_statistics_in_one_round_trip(
    store: PgDatabase, statements: list[str], tmp_path: Path
) -> None:
    stream = CorpusStream(500, 1)
    await writes.load(store, USER, stream, True)
    names = tuple(SOURCES)
    for kind, query in stream.corpus.queries[::7]:
        parsed = parse_query(query)
        alone = [await PgStore(store, USER, name, tmp_path).index_stats(parsed) for name in names]
        stores = [PgStore(store, USER, name, tmp_path) for name in names]
        together: dict[str, Any] = {}
        statements.clear()
        async with anyio.create_task_group() as group:
            for one in stores:
                group.start_soon(_counted, one, parsed, names, together)
        assert sum(STATS in sent for sent in statements) == len(statements) == 1, (kind, query)
        assert statements[0].count(STATS) == len(names)  # five statements, one round trip
        assert [together[name] for name in names] == alone, (kind, query)
        for one in stores:  # each store's search takes its own counts, not another source's
            assert (await one.sizes(parsed))[0] == together[one.source]
        assert len(statements) == 1


async def test_a_source_reads_its_own_statistics_when_the_joint_read_fails_or_it_is_not_among_them(
    store: PgDatabase, statements: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await writes.load(store, USER, CorpusStream(300, 1), True)
    parsed = parse_query("the gar*")
    names = ("notes", "media", "chats")
    alone = {name: await PgStore(store, USER, name, tmp_path).index_stats(parsed) for name in names}
    real = stats.sources_sizes

    async def broken(pg: PgDatabase, user: str, sources: Any, query: Any) -> Any:
        if len(sources) > 1:
            await anyio.sleep(0.05)  # the others ask while it is under way
            raise RuntimeError("the joint read failed")
        return await real(pg, user, sources, query)

    monkeypatch.setattr(stats, "sources_sizes", broken)
    failed: list[str] = []
    together: dict[str, Any] = {}

    async def counted(name: str) -> None:
        try:
            together[name] = await PgStore(store, USER, name, tmp_path).index_stats(parsed, names)
        except RuntimeError:
            failed.append(name)

    async with anyio.create_task_group() as group:
        for name in names:
            group.start_soon(counted, name)
    assert failed == ["notes"]  # the first to ask read for all, and says why it failed
    assert together == {name: alone[name] for name in names[1:]}  # the others read their own
    assert not store.caches[stats.JOINT]  # nothing left behind
    monkeypatch.setattr(stats, "sources_sizes", real)
    statements.clear()
    prompts = await PgStore(store, USER, "prompts", tmp_path).index_stats(parsed, names)
    assert prompts == await PgStore(store, USER, "prompts", tmp_path).index_stats(parsed)
    assert sum(STATS in sent for sent in statements) == 2  # not among them: its own, each time


async def _counted(store: PgStore, query: Any, names: tuple[str, ...], into: dict[str, Any]) -> None:
    """`store`'s statistics of `query` read together with `names`', as knowledge_search asks."""
    into[store.source] = await store.index_stats(query, names)


async def test_a_prefix_s_count_is_read_once_per_generation_of_its_source(
    store: PgDatabase, statements: list[str], tmp_path: Path
) -> None:
    writer = PgItemWriter(store, get_source("notes"), USER)
    await writer.write_items([_note(f"n{n}", f"wombat wombats burrow {n}") for n in range(4)])
    query = parse_query("womb* burrow")
    statements.clear()
    first = await stats.index_sizes(store, USER, "notes", query)
    assert first[0].df[WOMB] == 4
    assert await stats.index_sizes(store, USER, "notes", query) == first  # the count kept
    # one round trip each; the second names the generation its prefix (and item) counts are of
    assert len(statements) == 2 and statements[1].count("NULL") == statements[0].count("NULL") - 2
    await writer.write_items([_note("more", "wombling along")])  # a new generation
    again = await stats.index_sizes(store, USER, "notes", query)
    assert again[0].df[WOMB] == 5  # counted again, not the kept 4
    store.caches.clear()  # nothing kept: the same numbers read afresh
    assert await stats.index_sizes(store, USER, "notes", query) == again
    other = await stats.index_sizes(store, USER, "notes", parse_query("womb* wombl*"))
    assert other[0].df[WOMB] == 5 and other[0].df[WOMBL] == 1  # one prefix kept, one not


def _note(title: str, body: str) -> tuple[Path, ParsedItem]:
    return Path(f"{title}.md"), ParsedItem("", title, body, STAMP, STAMP)


async def test_a_phrase_ranked_from_the_plan_s_counts_reads_them_once_and_opens_no_snapshot_of_its_own(
    store: PgDatabase, statements: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = CorpusStream(SIZE, 1)
    await writes.load(store, USER, stream, True)
    store.caches[CACHE] = MemoryCopies(max_chunks=0)
    source, pg = SOURCES["notes"], PgStore(store, USER, "notes", tmp_path)
    phrases = [q for kind, q in stream.corpus.queries if kind == "phrase"]
    await source.search(pg, SearchRequest(phrases[0]), Defaults())  # the coverage row, once
    pages, ranked = [], 0
    for query in phrases:
        statements.clear()
        pages.append((await source.search(pg, SearchRequest(query, limit=10), Defaults())).model_dump())
        sent = "\n".join(statements)
        assert sent.count(STATS) == 1 and bm25.SIZES_SQL[:200] not in sent, query  # counted once
        assert "BEGIN" not in sent and "COMMIT" not in sent, query  # each trip its own transaction
        ranked += "hits AS" in sent
    assert ranked >= 3, ranked  # phrases ranked exactly, not only sampled
    monkeypatch.setattr(
        bm25,
        "_rank_known",
        lambda db, conn, source, user, asked, known: bm25._rank(db, conn, source, user, asked),
    )  # the counts read again, the hits and the ranking in one snapshot
    again = [(await source.search(pg, SearchRequest(q, limit=10), Defaults())).model_dump() for q in phrases]
    assert again == pages


async def test_a_copied_source_s_prefix_counts_come_from_its_copy_and_match_the_postings(
    store: PgDatabase, statements: list[str], tmp_path: Path
) -> None:
    stream = CorpusStream(2000, 1)
    await writes.load(store, USER, stream, True)
    prefixes = list(dict.fromkeys(query for kind, query in stream.corpus.queries if kind == "prefix"))
    counted = {}
    for query in prefixes:
        store.caches.clear()
        statements.clear()
        counted[query] = await stats.index_sizes(store, USER, "prompts", parse_query(query))
    unknown = statements[0].count("NULL")  # neither the items nor the prefix counted before
    assert sum(sizes[0].df[next(iter(sizes[0].df))] > 1 for sizes in counted.values()) > 5  # not all rare
    for query in prefixes:
        store.caches.clear()
        copies = store.caches.setdefault(CACHE, MemoryCopies())
        assert await copies.ready(store, (USER, "prompts"), get_source("prompts").weights) is not None
        statements.clear()
        assert await stats.index_sizes(store, USER, "prompts", parse_query(query)) == counted[query], query
        assert statements[0].count("NULL") == unknown - 1  # the prefix's count not made there
    await PgItemWriter(store, get_source("prompts"), USER).write_items([_note("more", "more text")])
    statements.clear()  # a new generation: the copy's counts are old, the postings count again
    again = await stats.index_sizes(store, USER, "prompts", parse_query(prefixes[-1]))
    assert (
        again[0].df == counted[prefixes[-1]][0].df
        and again[1].generation != counted[prefixes[-1]][1].generation
    )
