"""A small source of the PostgreSQL store ranked from its in-memory copy: the SQL ranking's page,
never a copy older than the database, only for small sources, within its bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.search.request import Found, SearchContext, SearchRequest
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.store import PgStore, lexical, memory
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).parents[4] / "fixtures"
STAMP = "2026-01-01T00:00:00+00:00"
QUERIES = {
    "notes": [
        "sourdough bread",
        "meeting notes project",
        "python*",
        "kubern* on-call",
        '"country loaf" levain',
        '"home server" backup*',
        "home-serv*",
        "the",
        '"of the"',
        '"in the garden"',
    ],
    "media": ["invoice payment", "meet* agenda", '"release notes"', "e-mail", '"to the"', "zzzz"],
    "prompts": ["review code", "summar*", '"you are"', "sql explain"],
    "characters": ["captain ship", "librar*", '"old librarian"'],
}


def context(store: PgStore, text: str, limit: int = 10, offset: int = 0) -> SearchContext:
    request = SearchRequest(text, limit=limit, offset=offset)
    return SearchContext(get_source(store.source), store, request, "relevance", 300)


async def with_copy(pg: PgDatabase, source: str, user: str = "local", **bounds: int) -> PgStore:
    """`user`'s `source` with its copy built (or found too large)."""
    copies = pg.caches.setdefault(memory.CACHE, memory.MemoryCopies(**bounds))
    store = PgStore(pg, user, source, Path("."))
    assert (
        await memory.search(store, context(store, "anything"), parse_query("anything")) is None
    )  # no copy yet
    await copies.wait()
    built = await copies.ready(pg, (user, source), get_source(source).weights)
    assert built is copies.get((user, source))
    return store


def page_of(found: Found) -> list[tuple[object, ...]]:
    return [(r["id"], r["chunk_rowid"], r["n"], r["total"]) for r in found.rows]


async def served_both_ways(store: PgStore, text: str, **page: int) -> tuple[Found | None, Found]:
    query, ctx = parse_query(text), context(store, text, **page)
    return await memory.search(store, ctx, query), await lexical.lexical_page(store, ctx, query)


@pytest.mark.parametrize("source", list(QUERIES))
async def test_the_copy_gives_the_sql_rankings_page_scores_totals_and_norm(
    store: PgDatabase, source: str
) -> None:
    await PgItemWriter(store, get_source(source), "local").run([FIXTURES / source])
    pg = await with_copy(store, source)
    for text in QUERIES[source]:
        for page in ({"limit": 10}, {"limit": 3, "offset": 2}):
            copied, sql = await served_both_ways(pg, text, **page)
            assert copied is not None, text
            assert page_of(copied) == page_of(sql), text
            assert [r["b"] for r in copied.rows] == pytest.approx(
                [r["b"] for r in sql.rows], rel=1e-9, abs=1e-9
            )
            assert copied.total == sql.total and copied.terms_of is None is sql.terms_of
            assert copied.norm == pytest.approx(sql.norm), text  # type: ignore[call-overload]
    assert page_of((await served_both_ways(pg, QUERIES[source][0]))[1]) != []  # the queries find something


async def test_filters_and_field_limits_are_left_to_the_sql_ranking(store: PgDatabase) -> None:
    await PgItemWriter(store, get_source("notes"), "local").run([FIXTURES / "notes"])
    pg = await with_copy(store, "notes")
    ctx = context(pg, "bread")
    ctx.request.columns = ("title",)
    assert await memory.search(pg, ctx, parse_query("bread")) is None
    assert await memory.search(pg, context(pg, "bread"), parse_query("bread")) is not None


def note(title: str, body: str) -> tuple[Path, ParsedItem]:
    return Path(f"{title}.md"), ParsedItem("", title, body, STAMP, STAMP)


async def test_a_write_after_the_copy_is_seen_by_the_next_search(store: PgDatabase) -> None:
    writer = PgItemWriter(store, get_source("notes"), "alice")
    await writer.write_items([note(f"n{n}", f"wombat burrow {n} meadow") for n in range(6)])
    await writer.write_items([note("other", "badgers dig at night")])
    pg = await with_copy(store, "notes", user="alice")
    before = await pg.lexical(context(pg, "badgers"), parse_query("badgers"))
    assert before.total == 1
    for change, stale in (
        ([note("new", "badgers again and badgers")], '"badgers dig"'),  # an item added; a phrase
        ([note("other", "no more of those animals")], "badgers"),  # an item updated; a word
    ):
        await writer.write_items(change)
        assert await memory.search(pg, context(pg, stale), parse_query(stale)) is None  # stale: SQL answers
        found = await pg.lexical(context(pg, "badgers"), parse_query("badgers"))
        _, sql = await served_both_ways(pg, "badgers")
        assert page_of(found) == page_of(sql)
        await store.caches[memory.CACHE].wait()
        copied, sql = await served_both_ways(pg, "badgers")
        assert copied is not None and page_of(copied) == page_of(sql)  # a current copy again
    await writer.prune_file("new.md")  # an item deleted
    assert await memory.search(pg, context(pg, "badgers"), parse_query("badgers")) is None
    assert (await pg.lexical(context(pg, "badgers"), parse_query("badgers"))).rows == []


async def test_a_source_above_the_limit_is_not_copied(store: PgDatabase) -> None:
    writer = PgItemWriter(store, get_source("notes"), "bob")
    await writer.write_items([note(f"n{n}", f"otter river {n}") for n in range(5)])
    pg = await with_copy(store, "notes", user="bob", max_chunks=4)
    copies = store.caches[memory.CACHE]
    assert copies.copies == {} and ("bob", "notes") in copies.skipped
    assert await memory.search(pg, context(pg, "otter"), parse_query("otter")) is None
    assert (await pg.lexical(context(pg, "otter"), parse_query("otter"))).total == 5


async def test_many_users_do_not_grow_the_copies_past_their_bound(store: PgDatabase) -> None:
    users = [f"user{n}" for n in range(4)]
    for user in users:
        writer = PgItemWriter(store, get_source("notes"), user)
        await writer.write_items([note(f"n{n}", f"heron pond {n} reeds") for n in range(3)])
    sizes = []
    for user in users:
        pg = await with_copy(store, "notes", user=user)
        copies = store.caches[memory.CACHE]
        sizes.append(copies.get((user, "notes")).size())
        copies.total_size = int(2.5 * sizes[0])  # room for two of these copies
    assert sum(c.size() for c in copies.copies.values()) <= copies.total_size < sum(sizes)
    assert list(copies.copies) == [("user2", "notes"), ("user3", "notes")]  # the oldest dropped
    assert (await pg.lexical(context(pg, "heron"), parse_query("heron"))).total == 3
