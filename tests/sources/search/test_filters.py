"""Source filters are data; the SQLite store compiles them into its own clauses (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from knowledge_mcp.sources.chats.source import sender_filter
from knowledge_mcp.sources.media.source import date_filter, media_type_filter
from knowledge_mcp.sources.notes.source import tag_filter
from knowledge_mcp.sources.prompts.source import field_filter
from knowledge_mcp.sources.search.lexical.filters import clause, clauses
from knowledge_mcp.sources.storage.store.filters import Filter, MetaIn

CASES: list[tuple[Filter, str, list[Any]]] = [
    (tag_filter(["Cooking", "#bread"]), "lower(t.value) IN (?,?)", ["cooking", "bread"]),
    (media_type_filter(["email", "pdf"]), "json_extract(i.meta, '$.media_type') IN (?,?)", ["email", "pdf"]),
    (
        date_filter("2025-06-03", "date_to"),
        "julianday(i.created_at) < julianday(?)",
        ["2025-06-04T00:00:00+00:00"],
    ),
    (field_filter(["name", "name", "details"]), "c.field IN (?,?)", ["name", "details"]),
    (
        sender_filter(" Alice "),
        "(lower(json_extract(c.meta, '$.sender')) IN (?) OR json_extract(c.meta, '$.role') IN (?))",
        ["alice", "alice"],
    ),
]


@pytest.mark.parametrize(("made", "sql", "values"), CASES)
def test_each_source_filter_compiles_to_a_sqlite_clause_with_bound_values(
    made: Filter, sql: str, values: list[Any]
) -> None:
    where, params = clause(made)
    assert sql in where and params == values


def test_chunk_and_item_filters_say_where_they_hold() -> None:
    assert sender_filter("bob").on_chunk and field_filter(["name"]).on_chunk
    assert not tag_filter(["x"]).on_chunk and not date_filter("2025-01-01", "date_from").on_chunk


def test_several_filters_keep_their_values_in_clause_order() -> None:
    where, params = clauses([tag_filter(["a"]), media_type_filter(["pdf"])])
    assert len(where) == 2 and params == ["a", "pdf"]


def test_a_meta_key_that_is_not_a_plain_name_is_refused() -> None:
    with pytest.raises(ValueError, match="meta key"):
        MetaIn("x') OR 1=1 --", ("v",))
