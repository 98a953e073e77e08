"""The diversify stage's pure parts: passages placed after their item, the page cut by items,
and the passages' SQL run against a real source database."""

from __future__ import annotations

from typing import Any

import pytest

from knowledge_mcp.sources.search.describe.results import page_rows
from knowledge_mcp.sources.search.diversify import interleaved
from knowledge_mcp.sources.search.lexical.sql import build_passages_sql as passages_sql


def rows(*ids: int) -> list[dict[str, Any]]:
    return [{"id": i, "n": k} for k, i in enumerate(ids)]


INTERLEAVED = [
    # (what it shows, item rows, passage rows, the ids in order)
    ("passages follow their item", [1, 2, 3], [2, 1, 1], [1, 1, 1, 2, 2, 3]),
    ("no passages: the same rows", [1, 2], [], [1, 2]),
    ("a passage of an item not on the page is left out", [1], [9], [1]),
]


@pytest.mark.parametrize(("shows", "items", "extra", "order"), INTERLEAVED, ids=[c[0] for c in INTERLEAVED])
def test_passages_follow_their_item(shows: str, items: list[int], extra: list[int], order: list[int]) -> None:
    assert [r["id"] for r in interleaved(rows(*items), rows(*extra))] == order


PAGES = [
    # (what it shows, row ids, limit, ids kept)
    ("one row per item: the first limit", [1, 2, 3], 2, [1, 2]),
    ("an item's passages stay with it", [1, 1, 2, 2, 3], 2, [1, 1, 2, 2]),
    ("fewer items than the limit: all", [1, 1, 2], 5, [1, 1, 2]),
    ("the row past the page is left out", [1, 2, 2, 3, 3], 2, [1, 2, 2]),
]


@pytest.mark.parametrize(("shows", "ids", "limit", "kept"), PAGES, ids=[c[0] for c in PAGES])
def test_a_page_counts_items_not_passages(shows: str, ids: list[int], limit: int, kept: list[int]) -> None:
    assert [r["id"] for r in page_rows(rows(*ids), limit)] == kept


def test_the_passages_sql_names_only_the_sources_tables() -> None:
    sql = passages_sql("notes", (3.0, 1.0), 2, 2, ["c.field IN (?)"])
    assert "notes_chunks_fts MATCH ?" in sql and "c.field IN (?)" in sql
    assert sql.count("?") == 1 + 2 + 2 + 1 + 1  # match, items, leads, the filter, the bound
    with pytest.raises(ValueError):
        passages_sql("notes; DROP TABLE x", (3.0, 1.0), 1, 1, [])
