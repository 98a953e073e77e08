"""The PostgreSQL store's page rows: read by name, ordered as the SQLite page (pure)."""

from __future__ import annotations

import pytest

from knowledge_mcp.sources.storage.postgres.store.lexical import ordered
from knowledge_mcp.sources.storage.postgres.store.rows import PgRow


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
