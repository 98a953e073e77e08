"""Reads in one round trip, arrays as literals, and a transaction's items written together."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, read_as
from knowledge_mcp.sources.storage.postgres.writers import arrays
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter

pytestmark = pytest.mark.anyio
STAMP = "2025-01-01T00:00:00+00:00"
AWKWARD = ["plain", 'a "quoted" word', "back\\slash", "{braces,comma}", "", "NULL", " spaced ", "é\nnew line"]
ITEMS_SQL = "SELECT id, title FROM pg_items WHERE source = %s ORDER BY id"


def note(title: str, text: str) -> ParsedItem:
    return ParsedItem("", title, text, STAMP, STAMP)


async def test_array_literals_read_back_as_the_lists_they_were_made_from(store: PgDatabase) -> None:
    texts = [*AWKWARD, None]
    row = await store.fetchone(
        "SELECT %s::text[] AS t, %s::bigint[] AS n, %s::int[] AS e, %s::jsonb[] AS j",
        (
            arrays.texts(texts),
            arrays.numbers([3, None, -7]),
            arrays.numbers([]),
            arrays.texts(['{"a": "b\\"c"}']),
        ),
    )
    assert row is not None
    assert row["t"] == texts
    assert row["n"] == [3, None, -7]
    assert row["e"] == []
    assert row["j"] == [{"a": 'b"c'}]


async def test_a_read_as_a_user_runs_as_that_user_and_leaves_no_user_behind(store: PgDatabase) -> None:
    """The row policies admit the rows of `knowledge.user_id`: the read sees it set to its user,
    and the connection, back in the pool, has no user."""
    names, rows = await read_as(store, "alice", "SELECT current_setting('knowledge.user_id') AS who")
    assert (names, rows) == (["who"], [("alice",)])
    async with store.connection() as conn:
        [(_, [(setting,)])] = await store.send(
            conn, [("SELECT current_setting('knowledge.user_id', true)", None)]
        )
    assert not setting


async def test_send_answers_each_statement_with_its_columns_and_rows(store: PgDatabase) -> None:
    async with store.connection() as conn:
        results = await store.send(
            conn, [("SELECT %s::text AS a, %s::int AS b", ('x"y', 2)), ("SELECT 1 WHERE false", None)]
        )
    assert results == [(["a", "b"], [('x"y', 2)]), (["?column?"], [])]


async def test_items_written_together_get_rowids_in_the_order_written_and_each_its_outcome(
    store: PgDatabase,
) -> None:
    writer = PgItemWriter(store, get_source("notes"), "alice")
    first = [(Path(f"{n}.md"), note(f"note {n}", f"wombat {n}")) for n in range(3)]
    assert await writer.write_items(first) == ["added"] * 3
    again = [
        (Path("3.md"), note("note 3", "wombat 3")),
        (Path("1.md"), note("note 1", "wombat changed")),
        first[2],
        (Path("4.md"), note("note 4", "wombat 4")),
    ]
    assert await writer.write_items(again) == ["added", "updated", "unchanged", "added"]
    _, rows = await read_as(store, "alice", ITEMS_SQL, ("notes",))
    assert [r[1] for r in rows] == ["note 0", "note 1", "note 2", "note 3", "note 4"]
    chunks = await store.fetchall(
        "SELECT i.title FROM pg_chunks c JOIN pg_items i ON i.user_id = c.user_id AND i.id = c.item "
        "WHERE c.user_id = 'alice' ORDER BY c.id"
    )
    # note 1's old chunk is gone; note 3 went in before note 1 was replaced, as written
    assert [c["title"] for c in chunks] == ["note 0", "note 2", "note 3", "note 1", "note 4"]
