"""The search SQL builder: pure, so tested with tables of inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.search.lexical.sql import ITEM_COLUMNS, SearchSpec, build_search_sql, column_match
from knowledge_mcp.sources.storage.db import open_database


@pytest.mark.parametrize(
    "columns, expected",
    [
        (None, '"tea" OR "cake"'),
        (("body",), '{body} : ("tea" OR "cake")'),
        (("title", "body"), '{title body} : ("tea" OR "cake")'),
        (("title", "title"), '{title} : ("tea" OR "cake")'),
    ],
)
def test_columns_wrap_the_expression_in_a_column_filter(
    columns: tuple[Any, ...] | None, expected: str
) -> None:
    assert column_match('"tea" OR "cake"', columns) == expected


@pytest.mark.parametrize(
    "columns",
    [
        (),
        ("meta",),
        (
            "body",
            "title) OR (x",
        ),
    ],
)
def test_columns_outside_the_fts_table_are_refused(columns: tuple[Any, ...]) -> None:
    with pytest.raises(ValueError, match="columns"):
        column_match('"tea"', columns)


def test_the_column_restricted_match_is_the_first_bound_parameter() -> None:
    sql, params = build_search_sql(SearchSpec("notes", '"tea"', limit=10, offset=0, columns=("title",)))
    assert "MATCH ?" in sql and params[0] == '{title} : ("tea")'
    assert params[-2:] == [11, 0]


@pytest.mark.anyio
@pytest.mark.parametrize("source", ["notes", "media", "chats", "characters", "prompts"])
async def test_a_result_row_carries_every_item_column_but_the_whole_content(
    tmp_path: Path, source: str
) -> None:
    src = get_source(source)
    db = await open_database(tmp_path / f"{source}.db", src.migrations)
    try:
        columns = [r[1] for r in await db.fetchall(f"PRAGMA table_info({source}_items)")]
    finally:
        await db.close()
    assert [c.removeprefix("i.") for c in ITEM_COLUMNS.split(", ")] == [c for c in columns if c != "content"]
