"""Query types: exact for what must match character for character, semantic for natural
language, mixed for a few keywords; and which retrievers each mode runs."""

from __future__ import annotations

import pytest

from knowledge_mcp.sources.search.dense.query_type import Route, query_type, route


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('"gave up on"', "exact"),
        ("pg_dump restore", "exact"),
        ("getUserName", "exact"),
        ("report.pdf", "exact"),
        ("E1234 error", "exact"),
        ("0x80070005", "exact"),
        ("HTTP-404", "exact"),
        ("migr*", "exact"),
        ("node.js install", "exact"),
        ("which novels did I enjoy last summer?", "semantic"),
        ("who fixed the heating", "semantic"),
        ("vitamin D deficiency raises the risk of fractures", "semantic"),
        ("sourdough starter", "mixed"),
        ("piranesi", "mixed"),
        ("", "mixed"),
    ],
)
def test_a_query_has_the_type_its_text_suggests(text: str, kind: str) -> None:
    assert query_type(text) == kind


@pytest.mark.parametrize(
    ("mode", "kind", "expected"),
    [
        ("auto", "exact", Route(lexical=True, dense=False)),
        ("auto", "mixed", Route(lexical=True, dense=True)),
        ("auto", "semantic", Route(lexical=True, dense=True)),
        ("lexical", "semantic", Route(lexical=True, dense=False)),
        ("semantic", "exact", Route(lexical=False, dense=True)),
        ("hybrid", "exact", Route(lexical=True, dense=True)),
    ],
)
def test_the_mode_overrides_the_route_the_query_type_picks(mode: str, kind: str, expected: Route) -> None:
    assert route(mode, kind) == expected  # type: ignore[arg-type]
