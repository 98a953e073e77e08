"""The sources' own SQLite statements, rewritten for the PostgreSQL item store (pure)."""

from __future__ import annotations

import pytest

from knowledge_mcp.sources.search.lexical.postgres import ordered
from knowledge_mcp.sources.storage.postgres.serving.dialect import to_postgres
from knowledge_mcp.sources.storage.postgres.serving.items import PgRow

ITEMS_OF = "FROM pg_items WHERE user_id = current_setting('knowledge.user_id', true) AND source = '{}')"


@pytest.mark.parametrize(
    ("sqlite", "has"),
    [
        (
            "SELECT item_id FROM prompts_items WHERE item_id = ?",
            [ITEMS_OF.format("prompts"), "AS prompts_items WHERE item_id = %s"],
        ),
        (
            "SELECT item_id, title FROM characters_items WHERE lower(title) = lower(?) ORDER BY id LIMIT 1",
            [ITEMS_OF.format("characters"), "lower(%s)"],
        ),
        (
            "SELECT json_extract(meta, '$.media_type') AS t FROM media_items GROUP BY 1",
            ["((meta)::jsonb ->> 'media_type') AS t", ITEMS_OF.format("media")],
        ),
        (
            "SELECT c.body FROM notes_chunks AS c WHERE c.item_rowid = ?",
            ["item AS item_rowid", ") AS c WHERE c.item_rowid = %s"],
        ),
        ("SELECT 1 FROM notes_items i WHERE i.title LIKE '50%?'", [") AS i WHERE", "LIKE '50%%?'"]),
    ],
)
def test_a_source_statement_reads_the_users_rows_of_that_source_with_psycopg_placeholders(
    sqlite: str, has: list[str]
) -> None:
    rewritten = to_postgres(sqlite)
    for part in has:
        assert part in rewritten
    assert "?" not in rewritten.replace("'50%%?'", "")


def test_a_row_reads_by_name_first_of_equals_by_position_and_as_keys_and_values() -> None:
    row = PgRow(["id", "title"], [7, "item"]).joined(["id", "title"], [9, "chunk"])
    assert (row["id"], row["title"], row[2], row.keys(), tuple(row)) == (
        7,
        "item",
        9,
        ["id", "title", "id", "title"],
        (7, "item", 9, "chunk"),
    )


def page_row(rowid: int, b: float, modified: str) -> PgRow:
    return PgRow(["id", "last_modified", "b"], [rowid, modified, b])


@pytest.mark.parametrize(
    ("recent", "order"),
    [
        (False, [2, 3, 1, 4]),  # bm25 first (lower is better), then newest, then rowid
        (True, [4, 2, 3, 1]),  # newest first, then bm25, then rowid
    ],
)
def test_the_page_is_ordered_as_the_sqlite_page(recent: bool, order: list[int]) -> None:
    rows = [
        page_row(1, -2.0, "2025-01-01"),
        page_row(2, -3.0, "2025-01-02"),
        page_row(3, -2.0, "2025-01-02"),
        page_row(4, -1.0, "2025-02-01"),
    ]
    assert [r["id"] for r in ordered(rows, recent)] == order
