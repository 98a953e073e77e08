"""Source filters, field-limited search and `per_item` answer from the PostgreSQL item store as from
the SQLite files: the repository's fixtures imported into both, the same calls through real MCP
clients of two servers (uris in order, snippets, matched terms, scores to 1e-6, totals, paging)."""

from __future__ import annotations

from typing import Any

import pytest

from ...conftest import call, error
from .conftest import Importing
from .test_pg_search import assert_same_page

pytestmark = pytest.mark.anyio

CASES: dict[str, list[dict[str, Any]]] = {
    "notes": [
        {"query": "bread", "keywords": ["cooking"]},
        {"query": "the", "keywords": ["cooking", "#homelab"]},
        {"query": "notes OR bread OR garden OR backup", "keywords": ["cooking", "backup"], "limit": 2},
        {"query": "the", "keywords": ["Reference"], "order_by": "recent"},
        {"query": "bread", "keywords": ["no-such-tag"]},
        {"query": "the", "per_item": 3},
        {"query": "sourdough OR levain OR flour", "per_item": 2, "limit": 3},
        {"query": "backup*", "keywords": ["backup"], "per_item": 2},
    ],
    "media": [
        {"query": "the", "media_types": ["email"]},
        {"query": "the", "media_types": ["pdf", "html", "transcript"]},
        {"query": "the", "date_from": "2025-06-03"},
        {"query": "the", "date_to": "2025-06-03"},
        {"query": "the OR meeting", "date_from": "2025-06-03T12:00:00+01:00", "date_to": "2025-07-01"},
        {"query": "meet* OR agenda", "media_types": ["email"], "date_from": "2025-06-01", "limit": 1},
        {"query": "the", "media_types": ["transcript"], "per_item": 3},
        {"query": "solar OR panel OR energy", "per_item": 4},
    ],
    "chats": [
        {"query": "the", "sender": "user"},
        {"query": "the", "sender": "ASSISTANT", "per_item": 3},
        {"query": "sourdough OR letter OR regex", "by": "title"},
        {"query": "sourdough OR letter OR hash", "by": "message", "sender": "user"},
        {"query": "letter OR heat* OR days", "by": "title", "per_item": 2},
        {"query": "letter OR heat* OR days", "by": "message", "per_item": 3},
        {"query": "mirelle", "per_item": 5},
    ],
    "prompts": [
        {"query": "code OR review", "fields": ["system_prompt"]},
        {"query": "you*", "fields": ["system_prompt", "user_prompt"]},
        {"query": "sql OR explain OR summary", "fields": ["name", "details"], "per_item": 3},
        {"query": '"you are"', "fields": ["details"]},
        {"query": "the", "per_item": 3},
    ],
    "characters": [
        {"query": "captain OR ship OR librarian", "per_item": 3},
        {"query": "the", "per_item": 2, "limit": 2, "offset": 1},
    ],
}


def _key(case: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in case.items())


def searched(source: str, case: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The tool and arguments of a case: `per_item` is knowledge_search's, over this source only,
    with the case's source options as its `filters`."""
    if "per_item" not in case:
        return f"{source}_search", {"mode": "lexical", **case}
    paging = {k: v for k, v in case.items() if k in ("query", "per_item", "limit", "offset")}
    options = {k: v for k, v in case.items() if k not in paging}
    filters = {"filters": {source: options}} if options else {}
    return "knowledge_search", {"sources": [source], "mode": "lexical", "seen": "show", **paging, **filters}


@pytest.mark.parametrize("source", list(CASES))
async def test_filtered_field_limited_and_per_item_searches_answer_from_postgresql_as_from_sqlite(
    pg_servers: Any, import_both: Importing, source: str
) -> None:
    await import_both(source)
    answered = 0
    async with pg_servers("sqlite") as lite, pg_servers("postgresql") as pg:
        for case in CASES[source]:
            tool, args = searched(source, case)
            page = await call(pg, tool, **args)
            expected = await call(lite, tool, **args)
            try:
                assert_same_page(expected, page)
            except AssertionError as failed:
                raise AssertionError(f"{source} {_key(case)}: {failed}") from None
            assert page.get("warnings") == expected.get("warnings"), _key(case)
            answered += bool(page["results"])
    assert answered >= len(CASES[source]) - 1  # every case but a deliberate empty one finds something


async def test_passages_follow_their_item_on_postgresql_as_on_sqlite(
    pg_servers: Any, import_both: Importing
) -> None:
    await import_both("media")
    async with pg_servers("sqlite") as lite, pg_servers("postgresql") as pg:
        tool, args = searched("media", {"query": "the", "media_types": ["transcript"], "per_item": 3})
        page, expected = await call(pg, tool, **args), await call(lite, tool, **args)
    uris = [h["uri"] for h in page["results"]]
    assert len(uris) > len(set(uris)), "an item brought further passages"
    assert [h.get("loc") for h in page["results"]] == [h.get("loc") for h in expected["results"]]


async def test_a_chats_character_filter_answers_from_postgresql_as_from_sqlite(
    pg_servers: Any, import_both: Importing
) -> None:
    await import_both("characters")
    await import_both("chats")
    async with pg_servers("sqlite") as lite, pg_servers("postgresql") as pg:
        cards = await call(lite, "characters_search", query="mirelle")
        card = cards["results"][0]["uri"].split("://", 1)[1]
        args = {"query": "captain OR navigator OR coffee", "character_id": card, "mode": "lexical"}
        page = await call(pg, "chats_search", **args)
        assert_same_page(await call(lite, "chats_search", **args), page)
    assert page["results"], "the character's chats are found"


async def test_a_filter_matching_only_low_ranked_items_still_returns_them(
    pg_servers: Any, import_both: Importing
) -> None:
    """The filter is applied before the top-k cut: the items that pass rank below a whole page of
    items that do not, and a page of one still finds the best of them."""
    await import_both("media")
    async with pg_servers("sqlite") as lite, pg_servers("postgresql") as pg:
        everything = await call(pg, "media_search", query="the", mode="lexical", limit=100)
        types = [h.get("media_type") for h in everything["results"]]
        last = types[-1]
        assert last not in types[:1], "the filtered kind is not the best ranked"
        args = {"query": "the", "media_types": [last], "limit": 1, "mode": "lexical"}
        page = await call(pg, "media_search", **args)
        assert_same_page(await call(lite, "media_search", **args), page)
    first = next(h["uri"] for h in everything["results"] if h.get("media_type") == last)
    assert [h["uri"] for h in page["results"]] == [first]
    assert page["total_estimated"] == types.count(last)


@pytest.mark.parametrize(
    ("source", "args", "field"),
    [
        ("media", {"date_from": "last tuesday"}, "date_from"),
        ("media", {"media_types": ["video"]}, "media_types"),
        ("prompts", {"fields": ["nope"]}, "fields"),
        ("chats", {"character_id": "no-such-card"}, "character_id"),
    ],
)
async def test_an_invalid_filter_value_on_postgresql_is_refused_naming_the_field(
    pg_servers: Any, import_both: Importing, source: str, args: dict[str, Any], field: str
) -> None:
    await import_both(source)
    async with pg_servers("sqlite") as lite, pg_servers("postgresql") as pg:
        ours = await error(pg, f"{source}_search", query="the", **args)
        theirs = await error(lite, f"{source}_search", query="the", **args)
    assert field in ours
    assert ours == theirs
