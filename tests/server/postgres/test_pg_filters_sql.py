"""A search's source filters become the PostgreSQL ranking's restriction (pure: no database)."""

from __future__ import annotations

import pytest

from knowledge_mcp.sources.media.source import date_filter, media_type_filter
from knowledge_mcp.sources.notes.source import tag_filter
from knowledge_mcp.sources.prompts.source import field_filter
from knowledge_mcp.sources.storage.postgres.store.filters import restriction
from knowledge_mcp.sources.storage.store.filters import Filter

CASES = [
    # filters, on the chunk, on the best item, bound values
    ([], "TRUE", "TRUE", {}),
    ([tag_filter(["Cooking", "#bread"])], "TRUE", "IN (%(f0)s,%(f1)s)", {"f0": "cooking", "f1": "bread"}),
    (
        [field_filter(["name", "name", "details"])],
        "c.field IN (%(f0)s,%(f1)s)",
        "TRUE",
        {"f0": "name", "f1": "details"},
    ),
    (
        [media_type_filter(["email"]), date_filter("2025-06-03", "date_to")],
        "TRUE",
        "i.created_at::timestamptz < %(f1)s::timestamptz",
        {"f0": "email", "f1": "2025-06-04T00:00:00+00:00"},
    ),
]


@pytest.mark.parametrize(("filters", "on_chunk", "on_item", "values"), CASES)
def test_filters_become_the_rankings_restriction_with_named_values(
    filters: list[Filter], on_chunk: str, on_item: str, values: dict[str, str]
) -> None:
    made = restriction(filters)
    assert on_chunk in made.chunks
    assert on_item in made.items
    assert made.params == values
    assert "?" not in made.chunks + made.items  # no SQLite placeholder is left


def test_item_and_chunk_filters_are_checked_on_the_users_rows() -> None:
    made = restriction([tag_filter(["x"]), field_filter(["name"])])
    assert "c.id = scored.chunk" in made.chunks and "c.user_id = %(user)s" in made.chunks
    assert "i.id = best.item" in made.items and "i.user_id = %(user)s" in made.items


def test_further_chunk_conditions_and_columns_are_kept() -> None:
    made = restriction([], ("title",), ["scored.item = 1"])
    assert made.chunks == "scored.item = 1"
    assert made.columns == ("title",)
