"""The search SQL builder: pure, so tested with tables of inputs."""

from __future__ import annotations

from typing import Any

import pytest

from sources.search_sql import SearchSpec, build_search_sql, column_match


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
