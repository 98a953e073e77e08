"""Search page rows (`Hit`): read by name, and on PostgreSQL ordered as the SQLite page (pure)."""

from __future__ import annotations

import pytest

from knowledge_mcp.sources.storage.postgres.store.lexical import ordered
from knowledge_mcp.sources.storage.store import Hit


def test_a_hit_reads_the_items_and_the_hits_columns_by_name_and_its_chunk_apart() -> None:
    hit = Hit({"id": 7, "title": "item"}, {"id": 9, "title": "chunk"}, -2.5, 3, 40)
    assert (hit["id"], hit["title"], hit["chunk_rowid"], hit["b"], hit["n"], hit["total"]) == (
        7,
        "item",
        9,
        -2.5,
        3,
        40,
    )
    assert hit.chunk["title"] == "chunk" and list(hit) == ["id", "title", "chunk_rowid", "b", "n", "total"]


def page_row(rowid: int, b: float, modified: str) -> Hit:
    return Hit({"id": rowid, "last_modified": modified}, {"id": rowid * 10}, b, 1, 4)


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
