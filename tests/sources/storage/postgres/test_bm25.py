"""Exact BM25 in PostgreSQL ranks as the SQLite store does, on the same real files imported both ways."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.search.scoring import norm
from knowledge_mcp.sources.search.stemming import stems
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.postgres import bm25
from knowledge_mcp.sources.storage.postgres.phrases import phrase_hits
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.schema import as_user
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).parents[4] / "fixtures"
ITEM_IDS_SQL = "SELECT id, item_id FROM {table}"

QUERIES = {
    "notes": [
        "sourdough bread",
        "meeting notes project",
        "garden tomatoes water",
        "python*",
        "kubern* on-call",
        '"country loaf" levain',
        '"red lentil" dal',
        '"home server" backup*',
        'bird* "field guide"',
        "home-serv*",
        "the",
        "zzzz",
        '"of the"',
        '"the the"',
        '"in the garden"',
    ],
    "media": [
        "invoice payment",
        "meet* agenda",
        '"release notes"',
        "transcript welcome",
        "e-mail",
        '"to the"',
    ],
    "chats": ["recipe", "python error", "character* story", '"thank you"'],
    "prompts": ["review code", "summar*", '"you are"', "sql explain"],
    "characters": ["captain ship", "librar*", '"old librarian"'],
}


async def import_both(source: str, tmp_path: Path, store: PgDatabase) -> Database:
    parser = get_source(source)
    lite = await open_database(database_path(tmp_path, "local", source), parser.migrations)
    await Importer(parser, lite).run([FIXTURES / source])
    await PgItemWriter(store, parser, "local").run([FIXTURES / source])
    await parser.memory_indexes(lite).ready()
    return lite


@pytest.mark.parametrize("source", list(QUERIES))
async def test_the_top_ten_scores_and_matched_terms_equal_the_sqlite_ranking(
    store: PgDatabase, tmp_path: Path, source: str
) -> None:
    parser = get_source(source)
    lite = await import_both(source, tmp_path, store)
    try:
        lite_ids = dict(await lite.fetchall(ITEM_IDS_SQL.format(table=f"{source}_items")))
        pg_ids = {r["id"]: r["item_id"] for r in await store.fetchall(ITEM_IDS_SQL.format(table="pg_items"))}
        matched_any = 0
        for text in QUERIES[source]:
            expected = await parser.rank_in_memory(lite, text, 10)
            got = await bm25.rank(store, source, "local", parse_query(text), 10, parser.weights)
            assert expected is not None and got is not None
            want = [
                (lite_ids[i], b)
                for i, b in zip(expected.item_rowids.tolist(), expected.bm25.tolist(), strict=True)
            ]
            have = [
                (pg_ids[i], b)
                for i, b in zip(got.ranked.item_rowids.tolist(), got.ranked.bm25.tolist(), strict=True)
            ]
            assert [i for i, _ in have] == [i for i, _ in want][:10], text
            for (_, b_pg), (_, b_lite) in zip(have, want, strict=False):
                assert math.isclose(b_pg, b_lite, rel_tol=1e-6), text
            assert got.ranked.total == expected.total, text
            assert got.ranked.matching_chunks.tolist() == expected.matching_chunks.tolist()[:10], text
            terms = parse_query(text).term_texts
            for lite_chunk, pg_chunk in zip(
                expected.chunk_rowids.tolist(), got.ranked.chunk_rowids.tolist(), strict=False
            ):
                lite_terms = [terms[n] for n in expected.terms_in([lite_chunk])[lite_chunk]]
                assert got.matched_terms(pg_chunk) == lite_terms, text
            matched_any += got.ranked.total > 0
        assert matched_any >= 2  # the queries exercise real matches, not only empty rankings
    finally:
        await lite.close()


async def test_the_calibration_norm_is_the_sqlite_sources_own(store: PgDatabase, tmp_path: Path) -> None:
    lite = await import_both("notes", tmp_path, store)
    try:
        await lite.write("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, 'notes_chunks_fts', 'row')")
        rows = {r[0]: r[1] for r in await lite.fetchall("SELECT term, doc FROM temp.terms")}
        chunks = (await lite.fetchone("SELECT count(*) FROM notes_chunks"))[0]  # type: ignore[index]
    finally:
        await lite.close()
    query = parse_query("sourdough bread zzzz")
    got = await bm25.rank(store, "notes", "local", query, 10, (3.0, 1.0))
    assert got is not None
    assert got.norm == norm([rows.get(s, 0) for s in stems(t.words[0] for t in query.terms)], chunks)


async def test_a_write_is_ranked_at_once_and_a_delete_forgets_it(store: PgDatabase) -> None:
    writer = PgItemWriter(store, get_source("notes"), "alice")
    stamp = "2026-01-01T00:00:00+00:00"
    await writer.write_items(
        [
            (Path("a.md"), ParsedItem("", "Quokka notes", "A quokka smiled at the ferry.", stamp, stamp)),
            (Path("b.md"), ParsedItem("", "Ferry", "The ferry to the island.", stamp, stamp)),
            *[
                (Path(f"{n}.md"), ParsedItem("", "Other", f"Something else {n}.", stamp, stamp))
                for n in range(3)
            ],
        ]
    )
    query = parse_query("quokka ferry")
    found = await bm25.rank(store, "notes", "alice", query, 10, (3.0, 1.0))
    assert found is not None and found.ranked.total == 2
    assert found.matched_terms(int(found.ranked.chunk_rowids[0])) == ["quokka", "ferry"]
    assert await writer.prune_file("a.md") == 1
    after = await bm25.rank(store, "notes", "alice", query, 10, (3.0, 1.0))
    assert after is not None and after.ranked.total == 1
    assert await store.fetchone("SELECT docs FROM pg_term_docs WHERE lexeme = 'quokka'") is None


async def test_a_ranking_counts_only_its_own_users_items(store: PgDatabase) -> None:
    stamp = "2026-01-01T00:00:00+00:00"
    for user, count in (("alice", 1), ("bob", 3)):
        writer = PgItemWriter(store, get_source("notes"), user)
        items = [
            (Path(f"{n}.md"), ParsedItem("", "Wombat", f"wombat burrow {n}", stamp, stamp))
            for n in range(count)
        ]
        await writer.write_items(items)
    alice = await bm25.rank(store, "notes", "alice", parse_query("wombat"), 10, (3.0, 1.0))
    bob = await bm25.rank(store, "notes", "bob", parse_query("wombat"), 10, (3.0, 1.0))
    assert alice is not None and bob is not None
    assert (alice.ranked.total, bob.ranked.total) == (1, 3)
    for query in ("wombat", "wom*", '"wombat burrow"'):  # carol never wrote: no partitions
        carol = await bm25.rank(store, "notes", "carol", parse_query(query), 10, (3.0, 1.0))
        assert carol is not None and carol.ranked.total == 0


@pytest.mark.parametrize(
    ("phrase", "in_title", "in_body"),
    [
        ('"the the"', 1, 2),  # a repeated word: starts 0 and 6 of the body
        ('"in the burrow"', 0, 1),  # the rarest word last
        ('"burrow the the"', 0, 1),
        ('"the wombat the"', 0, 0),  # every word there, never in this order
        ('"the burrow"', 0, 1),
    ],
)
async def test_a_phrase_counts_its_instances_per_column_whichever_word_is_rarest(
    store: PgDatabase, phrase: str, in_title: int, in_body: int
) -> None:
    stamp = "2026-01-01T00:00:00+00:00"
    item = ParsedItem("", "The the", "the the wombat in the burrow the the", stamp, stamp)
    await PgItemWriter(store, get_source("notes"), "alice").write_items([(Path("w.md"), item)])
    async with store.transaction() as conn:
        await as_user(conn, "alice")
        [hits] = await phrase_hits(conn, "notes", "alice", parse_query(phrase).terms)
    assert [(c[2], c[3]) for c in hits.chunks] == ([(in_title, in_body)] if in_title or in_body else [])


async def test_a_query_without_searchable_words_ranks_nothing(store: PgDatabase) -> None:
    assert await bm25.rank(store, "notes", "local", parse_query('"" *** ...'), 10, (3.0, 1.0)) is None
