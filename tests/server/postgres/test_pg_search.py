"""The search and get tools answer from the PostgreSQL item store as they do from the SQLite files:
the same files imported into both, the same queries through real MCP clients of two servers."""

from __future__ import annotations

from typing import Any

import pytest

from ...conftest import call, error
from .conftest import Importing

pytestmark = pytest.mark.anyio

QUERIES = {
    "notes": [
        "sourdough bread",
        "meeting notes project",
        "garden tomatoes water",
        "python*",
        '"country loaf" levain',
        '"home server" backup*',
        "home-serv*",
        "the",
        "zzzz",
    ],
    "media": [
        "invoice payment",
        "meet* agenda",
        "solar panel*",
        "transcript welcome",
        '"pasta history"',
        "e-mail",
    ],
    "chats": ["mirelle", "python error", "character* story", "conversation assistant", "zzzz"],
    "prompts": ["review code", "summar*", '"you are"', "sql explain"],
    "characters": ["captain ship", "librar*", "captain OR librarian", "zzzz"],
}


def hits(page: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    return [(h["uri"], h["snippet"], h.get("matched_terms") or []) for h in page["results"]]


def assert_same_page(lite: dict[str, Any], pg: dict[str, Any]) -> None:
    assert hits(pg) == hits(lite)
    for a, b in zip(lite["results"], pg["results"], strict=True):
        assert b["score"] == pytest.approx(a["score"], abs=1e-6)
    for key in ("count", "has_more", "next_offset", "total_estimated"):
        assert pg.get(key) == lite.get(key), key


@pytest.mark.parametrize("source", list(QUERIES))
async def test_each_sources_search_answers_from_postgresql_as_from_sqlite(
    pg_servers: Any, import_both: Importing, source: str
) -> None:
    await import_both(source)
    answered = 0
    async with pg_servers("sqlite") as lite, pg_servers("postgresql") as pg:
        for query in QUERIES[source]:
            args = {"query": query, "mode": "lexical", "limit": 10}
            page = await call(pg, f"{source}_search", **args)
            assert_same_page(await call(lite, f"{source}_search", **args), page)
            answered += bool(page["results"])
    assert answered >= len(QUERIES[source]) - 2  # all but a query or two that match nothing


async def test_pages_and_the_recent_order_match_sqlite(pg_servers: Any, import_both: Importing) -> None:
    await import_both("notes")
    async with pg_servers("sqlite") as lite, pg_servers("postgresql") as pg:
        for args in (
            {"query": "the", "limit": 3, "offset": 2},
            {"query": "notes OR bread OR garden", "limit": 2, "offset": 1},
            {"query": "the", "order_by": "recent", "limit": 4},
        ):
            assert_same_page(await call(lite, "notes_search", **args), await call(pg, "notes_search", **args))


ALL_QUERIES = ["captain", "meeting notes", "python*", "bread OR solar OR prompt", '"you are"', "the"]


async def import_every_source(import_both: Importing) -> None:
    for source in QUERIES:
        await import_both(source)


async def test_knowledge_search_ranks_every_source_from_postgresql_as_from_sqlite(
    pg_servers: Any, import_both: Importing
) -> None:
    await import_every_source(import_both)
    async with pg_servers("sqlite") as lite, pg_servers("postgresql") as pg:
        for query in ALL_QUERIES:
            args = {"query": query, "mode": "lexical", "limit": 10}
            ours, theirs = (
                await call(pg, "knowledge_search", **args),
                await call(lite, "knowledge_search", **args),
            )
            assert [h["uri"] for h in ours["results"]] == [h["uri"] for h in theirs["results"]], query
            assert hits(ours) == hits(theirs), query
            for a, b in zip(theirs["results"], ours["results"], strict=True):
                assert b["score"] == pytest.approx(a["score"], abs=1e-6), query
        sources = {
            h["uri"].split("://")[0] for h in (await call(pg, "knowledge_search", query="the"))["results"]
        }
    assert len(sources) >= 2  # the merge really spans sources


@pytest.mark.parametrize("source", list(QUERIES))
async def test_get_reads_the_same_text_from_postgresql(
    pg_servers: Any, import_both: Importing, source: str
) -> None:
    await import_both(source)
    async with pg_servers("sqlite") as lite, pg_servers("postgresql") as pg:
        page = await call(
            lite, "knowledge_search", query=QUERIES[source][0], sources=[source], mode="lexical"
        )
        assert page["results"]
        for hit in page["results"][:3]:
            for retrieval in ({"mode": "full"}, {"mode": "chunk_with_siblings", "max_tokens": 300}):
                args = {"uri": hit["uri"], "loc": hit.get("loc"), "retrieval": retrieval}
                ours, theirs = (
                    await call(pg, "knowledge_get", **args),
                    await call(lite, "knowledge_get", **args),
                )
                assert ours["content"] == theirs["content"]
                assert ours["meta"] == theirs["meta"]
                assert ours.get("next") == theirs.get("next")


async def test_get_of_an_unknown_item_on_postgresql_names_the_id(
    pg_servers: Any, import_both: Importing
) -> None:
    await import_both("notes")
    async with pg_servers("postgresql") as pg:
        message = await error(pg, "notes_get", note_id="no-such-note")
    assert "note_id" in message
