"""Postings packed in blocks: filled up to BLOCK chunks per term, cut on delete, rebuilt by migration 4,
their positions made bytes by migration 6."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.storage.items import ChunkSpan, ParsedItem
from knowledge_mcp.sources.storage.postgres import bm25
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, open_pg
from knowledge_mcp.sources.storage.postgres.postings import positions
from knowledge_mcp.sources.storage.postgres.postings.blocks import Chunks, pack, placed
from knowledge_mcp.sources.storage.postgres.postings.positions import BODY
from knowledge_mcp.sources.storage.postgres.schema import (
    BLOCK,
    COMPONENT,
    MIGRATIONS,
    as_user,
    ensure_user,
    partition_name,
)
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter

from .test_writing import assert_statistics_current

pytestmark = pytest.mark.anyio
STAMP = "2026-01-01T00:00:00+00:00"
BLOCKS_SQL = """SELECT block, n, cardinality(chunks) AS size, first_chunk, last_chunk,
        get_byte(places, 0) * 256 + get_byte(places, 1) AS first
    FROM pg_posting_blocks WHERE user_id = %s AND lexeme = %s ORDER BY block"""


def posting(lexeme: str, chunk: int) -> tuple[str, tuple[int, int, int, str]]:
    return lexeme, (chunk, 0, 1, "3")


@pytest.mark.parametrize(
    ("new", "last", "appended", "fresh"),
    [
        ([posting("a", 1)], {}, [], [("a", 0)]),  # a new term starts block 0
        ([posting("a", 9)], {"a": (2, 5)}, [("a", 2)], []),  # room in the last block
        ([posting("a", 9)], {"a": (2, BLOCK)}, [], [("a", 3)]),  # a full last block: the next one
        ([posting("a", c) for c in range(BLOCK + 1)], {}, [], [("a", 0)] * BLOCK + [("a", 1)]),
        ([posting("a", 1), posting("b", 2)], {"a": (0, BLOCK - 1)}, [("a", 0)], [("b", 0)]),
        ([posting("a", 1), posting("a", 2)], {"a": (4, BLOCK - 1)}, [], [("a", 5), ("a", 5)]),
    ],
)
def test_new_postings_fill_the_last_block_of_their_term_or_start_the_next(
    new: list[tuple[str, tuple[int, int, int, str]]],
    last: dict[str, tuple[int, int]],
    appended: list[tuple[str, int]],
    fresh: list[tuple[str, int]],
) -> None:
    by_term: dict[str, list[tuple[int, int, int, str]]] = {}
    for lexeme, term_posting in new:
        by_term.setdefault(lexeme, []).append(term_posting)
    got_appended, got_fresh = placed(by_term, last)
    assert [(lexeme, block) for lexeme, block, mine in got_appended for _ in mine] == appended
    assert [(lexeme, block) for lexeme, block, mine in got_fresh for _ in mine] == fresh
    got = [p[0] for _, _, mine in got_appended + got_fresh for p in mine]
    assert sorted(got) == sorted(p[0] for _, p in new)  # every chunk once


def test_a_blocks_arrays_go_as_one_literal_each_with_its_chunks_rowids_items_and_lengths() -> None:
    chunks = Chunks(ids=[30, 31, 32], items=["7", "7", "8"], lengths=["5", "9", "2"])
    blocks = [("wombat", 0, [(0, 1, 0, "-1073741824"), (2, 0, 2, "0,4")]), ("zebra", 3, [(1, 0, 1, "6")])]
    assert pack(blocks, chunks) == {
        "lexemes": '{"wombat","zebra"}',
        "blocks": "{0,3}",
        "ns": "{2,1}",
        "firsts": "{30,31}",
        "lasts": "{32,31}",
        "chunks": '{"{30,32}","{31}"}',
        "items": '{"{7,8}","{7}"}',
        "tf_titles": '{"{1,0}","{0}"}',
        "tf_bodies": '{"{0,2}","{1}"}',
        "dls": '{"{5,2}","{9}"}',
        "places": '{"000000000004","0006"}',  # title place 0, body places 0 and 4; 6
    }


def note(n: int, body: str) -> tuple[Path, ParsedItem]:
    return Path(f"{n}.md"), ParsedItem("", f"Note {n}", body, STAMP, STAMP)


async def test_a_terms_postings_fill_blocks_and_a_deleted_item_is_cut_out_of_its_block(
    store: PgDatabase,
) -> None:
    writer = PgItemWriter(store, get_source("notes"), "alice")
    count = 2 * BLOCK + 20
    await writer.write_items([note(n, f"wombat burrow {n}") for n in range(count)])
    await writer.write_items([note(count + n, "wombat again") for n in range(5)])  # appended
    blocks = await store.fetchall(BLOCKS_SQL, ("alice", "wombat"))
    assert [(b["block"], b["n"], b["size"]) for b in blocks] == [
        (0, BLOCK, BLOCK),
        (1, BLOCK, BLOCK),
        (2, 25, 25),
    ]
    assert blocks[0]["first"] == 0  # the body's first word
    assert await writer.prune_file(f"{BLOCK + 3}.md") + await writer.prune_file("0.md") == 2
    after = await store.fetchall(BLOCKS_SQL, ("alice", "wombat"))
    assert [(b["block"], b["n"], b["size"]) for b in after] == [
        (0, BLOCK - 1, BLOCK - 1),
        (1, BLOCK - 1, BLOCK - 1),
        (2, 25, 25),
    ]
    assert after[0]["first_chunk"] > blocks[0]["first_chunk"]  # chunk 0 was the first
    docs = await assert_statistics_current(store, "alice", "notes")
    assert docs["wombat"] == count + 5 - 2
    found = await bm25.rank(store, "notes", "alice", parse_query("wombat"), 10, (3.0, 1.0))
    assert found is not None and found.ranked.total == count + 3
    phrase = await bm25.rank(store, "notes", "alice", parse_query('"wombat again"'), 10, (3.0, 1.0))
    assert phrase is not None and phrase.ranked.total == 5


async def test_a_block_whose_every_posting_goes_is_deleted(store: PgDatabase) -> None:
    writer = PgItemWriter(store, get_source("notes"), "alice")
    await writer.write_items([note(1, "a zebu grazed"), note(2, "the meadow")])
    assert len(await store.fetchall(BLOCKS_SQL, ("alice", "zebu"))) == 1
    await writer.write_items([note(1, "a yak grazed")])  # replaced: its old postings go
    assert await store.fetchall(BLOCKS_SQL, ("alice", "zebu")) == []
    assert [b["n"] for b in await store.fetchall(BLOCKS_SQL, ("alice", "graze"))] == [1]
    assert (await assert_statistics_current(store, "alice", "notes"))["yak"] == 1


OLD_PARTITION_SQL = """CREATE TABLE {part} (LIKE pg_postings INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
ALTER TABLE pg_postings ATTACH PARTITION {part} FOR VALUES IN ('o''brien')"""
OLD_ROWS_SQL = """INSERT INTO pg_postings (user_id, source, lexeme, chunk, item, tf_title, tf_body, dl,
        positions)
    SELECT 'o''brien', 'notes', CASE WHEN mod(c, 2) = 0 THEN 'even' ELSE 'odd' END, c, c / 10, 0, 1, 7,
        '{' || c || '}'
    FROM generate_series(1, 300) AS c"""


async def test_migration_4_rebuilds_each_users_postings_rows_as_blocks(pg_url: str) -> None:
    db = await open_pg(pg_url)
    try:
        assert await migrate(db, COMPONENT, MIGRATIONS[:3]) == 3
        await db.write(OLD_PARTITION_SQL.format(part=partition_name("pg_postings", "o'brien")))
        await db.write(OLD_ROWS_SQL)
        assert await migrate(db, COMPONENT, MIGRATIONS) == len(MIGRATIONS)
        assert await db.fetchone("SELECT to_regclass('pg_postings') AS t") == {"t": None}
        evens = await db.fetchall(BLOCKS_SQL, ("o'brien", "even"))
        assert [(b["block"], b["n"]) for b in evens] == [(0, BLOCK), (1, 150 - BLOCK)]
        assert (evens[0]["first_chunk"], evens[0]["first"], evens[1]["last_chunk"]) == (2, 2, 300)
        part = partition_name("pg_posting_blocks", "o'brien")
        policies = await db.fetchone("SELECT count(*) AS n FROM pg_policies WHERE tablename = %s", (part,))
        assert policies == {"n": 1}  # the user's own partition, as ensure_user makes it
        chunks = await db.fetchone("SELECT sum(n) AS n FROM pg_posting_blocks WHERE lexeme = 'odd'")
        assert chunks == {"n": 150}
    finally:
        await db.close()


V5_BLOCK_SQL = """INSERT INTO pg_posting_blocks (user_id, source, lexeme, block, n, first_chunk, last_chunk,
        chunks, items, tf_titles, tf_bodies, dls, positions)
    VALUES ('dana@example.org', 'notes', 'fern', 0, 3, 4, 9, '{4,5,9}', '{1,1,2}', '{1,0,0}', '{2,1,1}',
        '{9,9,70001}', '{"-1073741823,3,8","0","70000"}'),
    ('dana@example.org', 'notes', 'moss', 0, 1, 4, 4, '{4}', '{1}', '{0}', '{1}', '{9}', '{"5"}')"""
"""A user's blocks as migration 5 left them: positions as text, a title place of 1 stored as
TITLE_BASE + 1, and a place past 16 bits in a long chunk."""
PLACES_SQL = "SELECT lexeme, places FROM pg_posting_blocks WHERE user_id = 'dana@example.org' ORDER BY lexeme"


async def test_migration_6_turns_each_users_positions_into_places_as_bytes(pg_url: str) -> None:
    db = await open_pg(pg_url)
    try:
        assert await migrate(db, COMPONENT, MIGRATIONS[:5]) == 5
        await ensure_user(db, "dana@example.org")
        async with db.transaction() as conn:
            await as_user(conn, "dana@example.org")
            await conn.execute(V5_BLOCK_SQL)
        assert await migrate(db, COMPONENT, MIGRATIONS) == len(MIGRATIONS)
        async with db.transaction() as conn:
            await as_user(conn, "dana@example.org")
            rows = await (await conn.execute(PLACES_SQL)).fetchall()
        assert [r[0] for r in rows] == ["fern", "moss"]
        fern_places, moss_places = rows[0][1], rows[1][1]
        assert positions.is_wide(fern_places) and not positions.is_wide(moss_places)
        titles, bodies = np.asarray([1, 0, 0]), np.asarray([2, 1, 1])
        assert positions.decode([fern_places], titles, bodies).tolist() == [
            1,
            BODY + 3,
            BODY + 8,
            BODY,
            BODY + 70000,
        ]
        assert positions.decode([moss_places], np.asarray([0]), np.asarray([1])).tolist() == [BODY + 5]
        columns = await db.fetchall(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'pg_posting_blocks'::regclass AND attnum > 0"
            " AND NOT attisdropped"
        )
        assert "positions" not in {c["attname"] for c in columns}
    finally:
        await db.close()


async def test_a_chunk_too_long_for_16_bit_places_gets_a_wide_block_and_its_phrases_are_found(
    store: PgDatabase,
) -> None:
    writer = PgItemWriter(store, get_source("notes"), "alice")
    long_body = "filler " * 70_000 + "blue heron"  # one chunk (as a chat message is)
    one_chunk = ParsedItem("", "Long", long_body, STAMP, STAMP, chunks=[ChunkSpan(0, len(long_body))])
    await writer.write_items([note(1, "a blue heron"), (Path("2.md"), one_chunk)])
    await writer.write_items([note(3, "blue heron again")])  # not appended to the wide block
    async with store.transaction() as conn:
        await as_user(conn, "alice")
        found = await conn.execute(
            "SELECT block, n, places FROM pg_posting_blocks WHERE user_id = 'alice' AND lexeme = 'heron'"
            " ORDER BY block"
        )
        blocks = await found.fetchall()
    assert [(b[0], b[1], positions.is_wide(b[2])) for b in blocks] == [(0, 2, True), (1, 1, False)]
    phrase = await bm25.rank(store, "notes", "alice", parse_query('"blue heron"'), 10, (3.0, 1.0))
    assert phrase is not None and phrase.ranked.total == 3
    await writer.prune_file("1.md")  # cut out of the wide block, which stays wide
    phrase = await bm25.rank(store, "notes", "alice", parse_query('"blue heron"'), 10, (3.0, 1.0))
    assert phrase is not None and phrase.ranked.total == 2
    await assert_statistics_current(store, "alice", "notes")
