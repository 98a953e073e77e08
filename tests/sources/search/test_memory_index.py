"""The in-memory copy of a small source's index ranks exactly as FTS5 does, and is never used
once the database has changed."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from knowledge_mcp.server.context import DatabasePool
from knowledge_mcp.sources.models import SearchResponse
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.notes.source import NotesOptions
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.lexical import memory, memory_index, vocabulary
from knowledge_mcp.sources.search.lexical import sql as search_sql
from knowledge_mcp.sources.search.lexical.memory import MemoryRetriever
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.search.stemming import stems
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from tests.conftest import FIXTURES, import_into

QUERIES = [
    "sourdough bread recipe",
    "postgres backup",
    "pg_dump restore",  # a word with inner punctuation is a phrase
    '"rest api" design',
    "garden tomatoes watering schedule",
    "the",  # only a stop word: searched as is
    "meeting notes project deadline",
    "zzzunknownword",
    "bread*",  # a prefix
]
BM25_SQL = (
    "SELECT rowid, bm25(notes_chunks_fts, 3.0, 1.0) FROM notes_chunks_fts WHERE notes_chunks_fts MATCH ?"
)


async def fts_only(db: Database, request: SearchRequest, monkeypatch: pytest.MonkeyPatch) -> SearchResponse:
    """The answer FTS5 gives, with the copy switched off for this one search."""
    with monkeypatch.context() as m:
        m.setattr(MemoryRetriever, "retrieve", _no_copy)
        return await notes.search(SqliteStore(db, "notes"), request, Defaults())


async def _no_copy(*args: object) -> None:
    return None


def copy_answers(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the memory copy answered (True) or left it to FTS5, search by search, from now on."""
    used: list[bool] = []
    original = MemoryRetriever.retrieve

    async def spy(*args: object) -> object:
        found = await original(*args)  # type: ignore[arg-type]
        used.append(found is not None)
        return found

    monkeypatch.setattr(MemoryRetriever, "retrieve", spy)
    return used


def shape(response: SearchResponse, snippets: bool = True) -> list[tuple[object, ...]]:
    return [
        (r.id, r.rank, r.score, r.snippet if snippets else "", r.loc, r.match_count) for r in response.results
    ]


@pytest.mark.anyio
async def test_the_copy_scores_every_row_as_fts5_bm25_does(notes_db: Database) -> None:
    index = await notes.memory_indexes(notes_db).ready()
    assert index is not None and index.chunks > 0
    conn = sqlite3.connect(notes_db.path)
    try:
        for query in ["sourdough bread recipe", "postgres backup database", "garden soil compost"]:
            words = [t.words[0] for t in parse_query(query).terms]
            scores = index.scores_of(stems(words))
            expected = conn.execute(BM25_SQL, (parse_query(query).match_expression(),)).fetchall()
            assert expected, query
            assert {rowid for rowid, _ in expected} == set(scores)
            for rowid, bm25 in expected:
                assert math.isclose(-scores[rowid], bm25, rel_tol=1e-12), (query, rowid)
    finally:
        conn.close()


@pytest.mark.anyio
@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize(("limit", "offset"), [(10, 0), (3, 0), (3, 3), (50, 0)])
async def test_a_search_answers_the_same_with_the_copy_as_with_fts5(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch, query: str, limit: int, offset: int
) -> None:
    request = SearchRequest(query, limit=limit, offset=offset)
    expected = await fts_only(notes_db, request, monkeypatch)
    assert await notes.memory_indexes(notes_db).ready() is not None
    used = copy_answers(monkeypatch)
    got = await notes.search(SqliteStore(notes_db, "notes"), request, Defaults())
    assert used == [True]
    assert shape(got, snippets=False) == shape(expected, snippets=False)
    if any(len(t.words) > 1 for t in parse_query(query).terms):
        # FTS5's text scan counts a phrase's words wherever they are; the copy knows which
        # chunks hold the phrase itself, and centres the snippet on what the chunk matched.
        for result, fts in zip(got.results, expected.results, strict=True):
            assert set(result.matched_terms) <= set(fts.matched_terms)
            words = [t.split()[0][:5].lower() for t in result.matched_terms]
            assert result.snippet == fts.snippet or any(w in result.snippet.lower() for w in words)
    else:
        assert [r.snippet for r in got.results] == [r.snippet for r in expected.results]
        assert [r.matched_terms for r in got.results] == [r.matched_terms for r in expected.results]
    assert (got.has_more, got.next_offset, got.total_estimated) == (
        expected.has_more,
        expected.next_offset,
        expected.total_estimated,
    )


@pytest.mark.anyio
async def test_item_filters_still_apply_and_a_short_page_is_refilled(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = NotesOptions(keywords=["cooking"])
    request = await notes.search_request("bread flour water salt eggs", options, limit=5)
    expected = await fts_only(notes_db, request, monkeypatch)
    assert expected.count > 0
    assert await notes.memory_indexes(notes_db).ready() is not None
    # Candidates for one result only: the folder filter leaves the page short, so every
    # match is ranked again.
    monkeypatch.setattr("knowledge_mcp.sources.search.lexical.memory.CANDIDATE_CAP", 1)
    monkeypatch.setattr("knowledge_mcp.sources.search.lexical.memory.PER_RESULT", 0)
    got = await notes.search(SqliteStore(notes_db, "notes"), request, Defaults())
    assert shape(got) == shape(expected)
    assert all("cooking" in r.tags for r in got.results)


@pytest.mark.anyio
async def test_a_new_item_is_found_at_once_and_the_copy_is_made_again(notes_db: Database) -> None:
    indexes = notes.memory_indexes(notes_db)
    before = await indexes.ready()
    assert before is not None
    stamp = "2026-01-02T03:04:05Z"
    item = ParsedItem(
        "inbox/quokka.md", "Quokka sighting", "A quokka smiled on Rottnest Island.", stamp, stamp
    )
    await Importer(notes, notes_db).write_item(Path("inbox/quokka.md"), item)
    assert indexes.current() is None  # the old copy is not used for the changed database
    found = await notes.search(SqliteStore(notes_db, "notes"), SearchRequest("quokka"), Defaults())
    assert [r.title for r in found.results] == ["Quokka sighting"]
    after = await indexes.ready()
    assert after is not None and after is not before and after.version != before.version
    assert stems(["quokka"])[0] in after.terms


@pytest.mark.anyio
async def test_a_change_by_another_connection_is_noticed(notes_db: Database) -> None:
    indexes = notes.memory_indexes(notes_db)
    assert await indexes.ready() is not None
    other = sqlite3.connect(notes_db.path)
    try:
        other.execute("DELETE FROM notes_items WHERE title LIKE '%ourdough%'")
        other.commit()
    finally:
        other.close()
    assert indexes.current() is None
    found = await notes.search(SqliteStore(notes_db, "notes"), SearchRequest("sourdough"), Defaults())
    assert all("ourdough" not in r.title for r in found.results)


@pytest.mark.anyio
async def test_a_source_over_the_size_limit_is_not_copied(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_index, "MAX_CHUNKS", 3)
    assert await notes.memory_indexes(notes_db).ready() is None
    found = await notes.search(SqliteStore(notes_db, "notes"), SearchRequest("sourdough bread"), Defaults())
    assert found.count > 0  # FTS5 answers


@pytest.mark.anyio
async def test_an_empty_source_has_an_empty_copy(tmp_path: Path) -> None:
    db = await open_database(database_path(tmp_path, "local", "notes"), notes.migrations)
    try:
        index = await notes.memory_indexes(db).ready()
        assert index is not None and index.chunks == 0
        found = await notes.search(SqliteStore(db, "notes"), SearchRequest("anything"), Defaults())
        assert found.count == 0 and found.total_estimated == 0
    finally:
        await db.close()


@pytest.mark.anyio
async def test_an_empty_copy_answers_nothing_without_ranking_or_fts5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Most users leave some sources empty, and knowledge_search asks every source: an empty
    copy answers at once (no terms stemmed, no ranking, no phrase scored by FTS5) what FTS5 would
    have answered, and stops answering as soon as the source has an item."""
    db = await open_database(database_path(tmp_path, "local", "notes"), notes.migrations)
    try:
        assert await notes.memory_indexes(db).ready() is not None
        request = SearchRequest('"rest api" bread* sourdough', snippet_length=20)
        expected = await fts_only(db, request, monkeypatch)
        asked: list[str] = []

        async def query_terms(*args: object) -> None:
            asked.append("terms")

        async def scored_alone(*args: object) -> list:  # type: ignore[type-arg]
            asked.append("fts5")
            return []

        def rank(*args: object) -> None:
            raise AssertionError("an empty copy is not ranked")

        store = SqliteStore(db, "notes")
        with monkeypatch.context() as m:
            m.setattr(memory, "query_terms", query_terms)
            m.setattr(memory, "_scored_alone", scored_alone)
            m.setattr(memory_index.MemoryIndex, "rank", rank)
            used = copy_answers(m)
            got = await notes.search(store, request, Defaults())
            assert got.model_dump() == expected.model_dump()
            assert got.warnings  # the snippet length's, as every source says it
            for query in ("anything", '"rest api" design', "bread*"):
                found = await notes.search(store, SearchRequest(query), Defaults())
                assert (found.count, found.total_estimated) == (0, 0), query
        assert used == [True] * 4 and asked == []
        stamp = "2026-01-02T03:04:05Z"
        item = ParsedItem("inbox/quokka.md", "Quokka sighting", "A quokka smiled.", stamp, stamp)
        await Importer(notes, db).write_item(Path("inbox/quokka.md"), item)
        found = await notes.search(store, SearchRequest("quokka"), Defaults())
        assert [r.title for r in found.results] == ["Quokka sighting"]
    finally:
        await db.close()


@pytest.mark.anyio
async def test_a_ranked_page_reads_the_same_bound_as_values_or_as_json(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert await notes.memory_indexes(notes_db).ready() is not None
    request = SearchRequest("bread postgres garden meeting", limit=7, offset=2)
    as_values = await notes.search(SqliteStore(notes_db, "notes"), request, Defaults())
    monkeypatch.setattr(search_sql, "VALUES_ROWS", 0)
    as_json = await notes.search(SqliteStore(notes_db, "notes"), request, Defaults())
    assert as_values.count == 7
    assert shape(as_json) == shape(as_values)
    assert as_json.total_estimated == as_values.total_estimated


@pytest.mark.anyio
@pytest.mark.parametrize(("limit", "copied"), [(0, False), (3, False), (1_000_000, True)])
async def test_the_server_setting_sets_which_sources_are_copied(
    tmp_path: Path, limit: int, copied: bool
) -> None:
    await import_into(tmp_path, "notes", FIXTURES / "notes")
    pool = DatabasePool(memory_index_max_chunks=limit)
    try:
        db = await pool.get(database_path(tmp_path, "local", "notes"), "notes")
        assert (await notes.memory_indexes(db).ready() is not None) is copied
        found = await notes.search(SqliteStore(db, "notes"), SearchRequest("sourdough bread"), Defaults())
        assert found.count > 0
    finally:
        await pool.close()


@pytest.mark.anyio
async def test_the_postings_grouped_in_numpy_are_sqlites_own_grouping(notes_db: Database) -> None:
    from knowledge_mcp.sources.search.lexical import vocabulary

    conn = sqlite3.connect(notes_db.path)
    try:
        conn.execute("BEGIN")
        *arrays, terms = vocabulary.read_postings(conn, "notes")
        *grouped, grouped_terms = vocabulary._grouped_by_sqlite(conn)
    finally:
        conn.close()
    assert len(arrays[0]) > 1000 and terms == grouped_terms and arrays[1].sum() > 0
    for mine, sqlites in zip(arrays, grouped, strict=True):
        assert mine.tolist() == sqlites.tolist()


@pytest.mark.anyio
async def test_the_copy_scores_a_prefix_exactly_as_fts5_does(notes_db: Database) -> None:
    """Every prefix of every index term (one to six letters): the same rows and the very same
    floats as FTS5's `bm25()` of the prefix alone, so a page ranks and scores as before."""
    index = await notes.memory_indexes(notes_db).ready()
    assert index is not None and index.counts is not None
    conn = sqlite3.connect(notes_db.path)
    try:
        prefixes = sorted({term[:n] for term in index.terms for n in range(1, 7) if term[:n].isalnum()})
        assert len(prefixes) > 500
        for prefix in prefixes:
            expected = conn.execute(BM25_SQL, (f'"{prefix}" *',)).fetchall()
            hits = memory.prefix_hits(index, stems([prefix])[0])
            assert hits is not None
            assert list(zip(hits[0].tolist(), hits[1].tolist(), strict=True)) == sorted(expected), prefix
    finally:
        conn.close()


@pytest.mark.anyio
async def test_a_prefix_is_left_to_fts5_when_the_copy_could_sum_it_differently(notes_db: Database) -> None:
    f = np.array([1.0, 2.5, 3.0])
    length, names = np.array([4.0, 5.0]), ["apple", "banana", "cherry"]
    assert vocabulary.counts_of(f, length, 4.5, names) is None  # not whole numbers
    assert vocabulary.counts_of(np.floor(f), length, 4.5, names[::-1]) is None  # not FTS5's order
    counts = vocabulary.counts_of(np.floor(f), length, 4.5, names)
    assert counts is not None and counts.freqs.tolist() == [1.0, 2.0, 3.0]
    index = await notes.memory_indexes(notes_db).ready()
    assert index is not None
    without = memory_index.MemoryIndex(**{**vars(index), "counts": None})
    assert memory.prefix_hits(without, "bread") is None


@pytest.mark.anyio
async def test_a_prefix_query_asks_fts5_only_for_its_phrases(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:

    assert await notes.memory_indexes(notes_db).ready() is not None
    asked: list[list[str]] = []
    original = memory._scored_alone

    async def spy(db: Database, source: object, terms: list) -> list:  # type: ignore[type-arg]
        asked.append([t.fts() for t in terms])
        return await original(db, source, terms)  # type: ignore[arg-type]

    monkeypatch.setattr(memory, "_scored_alone", spy)
    store = SqliteStore(notes_db, "notes")
    found = await notes.search(store, SearchRequest('bread* "rest api" sourdo*'), Defaults())
    assert found.count > 0
    assert asked == [['"rest api"']]


@pytest.mark.anyio
@pytest.mark.parametrize("query", ["bread*", "café*", "sourdough bread*"])
async def test_prefix_searches_and_counts_leave_a_current_copy_as_it_is(
    notes_db: Database, query: str
) -> None:
    """Asking a small source for a vocabulary (a prefix's counts or plan) once rebuilt its copy in
    a worker thread, about a second of it at 7,000 chunks, while searches ran."""
    indexes = notes.memory_indexes(notes_db)
    copy = await indexes.ready()
    assert copy is not None
    store = SqliteStore(notes_db, "notes")
    await store.index_stats(parse_query(query))
    await notes.search(store, SearchRequest(query), Defaults())
    assert indexes.terms() is None
    assert indexes._task is None and indexes.index is copy


@pytest.mark.anyio
async def test_the_copy_counts_a_prefix_as_fts5s_probe_does(notes_db: Database) -> None:
    from knowledge_mcp.sources.search.lexical.plan import estimate_keys
    from knowledge_mcp.sources.search.lexical.term_stats import TermStats

    assert await notes.memory_indexes(notes_db).ready() is not None
    store = SqliteStore(notes_db, "notes")
    for query in ["bread*", "s*", "sourdough gard* recipe", '"rest api" pos*', "zzqx*"]:
        parsed = parse_query(query)
        keys = [k for t in parsed.terms for k in estimate_keys(t)]
        expected = await TermStats("notes").lookup(notes_db, keys)  # FTS5's probes
        assert await store.index_stats(parsed) == expected, query
