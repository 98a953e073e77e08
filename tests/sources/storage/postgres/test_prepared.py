"""Hot search statements on PostgreSQL run from prepared statements with generic plans
(`sources/storage/postgres/prepared.py`): each connection prepares a marked statement once, and
later searches execute it without planning it again. Counted in `pg_prepared_statements`."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from psycopg.adapt import Transformer

from knowledge_mcp.bench.corpus import CorpusStream
from knowledge_mcp.bench.postgres import writes
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.storage.postgres import pool
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.prepared import (
    CUSTOM,
    GENERIC,
    array_literal,
    literal_type,
    marked,
    mode_of,
    numbered,
)
from knowledge_mcp.sources.storage.postgres.store import PgStore
from knowledge_mcp.sources.storage.postgres.store.memory import CACHE, MemoryCopies

pytestmark = pytest.mark.anyio
USER = "local"
PLANS_SQL = """SELECT name, generic_plans, custom_plans FROM pg_prepared_statements
    WHERE name LIKE 'knowledge\\_%'"""


async def plans(store: PgDatabase) -> dict[str, tuple[int, int]]:
    """Each prepared statement of ours on every connection the pool holds: generic and custom
    plans run, summed over the connections."""
    counted: dict[str, tuple[int, int]] = {}
    for _ in range(store.pool.get_stats()["pool_size"]):
        async with store.pool.connection() as conn:
            for name, generic, custom in await (await conn.execute(PLANS_SQL)).fetchall():
                was = counted.get(name, (0, 0))
                counted[name] = (was[0] + generic, was[1] + custom)
    return counted


async def searched(store: PgDatabase, tmp_path: Path, queries: list[str]) -> list[Any]:
    source = SOURCES["notes"]
    pages = []
    for query in queries:
        found = await source.search(PgStore(store, USER, "notes", tmp_path), SearchRequest(query), Defaults())
        pages.append(found.model_dump())
    return pages


async def test_a_large_source_s_searches_run_their_statistics_from_a_generic_prepared_plan(
    store: PgDatabase, tmp_path: Path
) -> None:
    stream = CorpusStream(1000, 1)
    await writes.load(store, USER, stream, True)
    store.caches[CACHE] = MemoryCopies(max_chunks=0)  # ranked from the postings
    queries = [q for kind, q in stream.corpus.queries if kind in ("rare", "common", "prefix")][:30]
    await searched(store, tmp_path, queries)
    counted = await plans(store)
    names = marked()
    statistics = [n for n in counted if names[n].startswith("SELECT (SELECT chunks")]
    assert statistics, counted
    assert sum(counted[n][0] for n in statistics) >= len(queries), counted
    generic = [n for n in counted if mode_of(n) == GENERIC]
    assert all(counted[n][1] == 0 for n in generic), counted  # never planned per run


async def test_a_large_source_s_word_and_prefix_rankings_are_planned_once_and_phrase_rankings_per_run(
    store: PgDatabase, tmp_path: Path
) -> None:
    stream = CorpusStream(1000, 1)
    await writes.load(store, USER, stream, True)
    store.caches[CACHE] = MemoryCopies(max_chunks=0)
    queries = [q for kind, q in stream.corpus.queries if kind in ("rare", "mix", "prefix", "phrase")]
    await searched(store, tmp_path, queries)
    counted = await plans(store)
    names = marked()
    rankings = [n for n in counted if "WITH " in names[n] and "hits AS" in names[n]]
    by_phrase = [n for n in rankings if "phrase_ns" in names[n]]
    by_terms = [n for n in rankings if n not in by_phrase]
    assert any("q(low, high, n)" in names[n] for n in by_terms) and by_phrase, counted
    assert all(mode_of(n) == GENERIC for n in by_terms)
    assert all(counted[n][1] == 0 for n in by_terms), counted  # never planned per run
    assert sum(counted[n][0] for n in by_terms) >= len(queries) // 4, counted  # the generic plans, run
    assert all(mode_of(n) == CUSTOM for n in by_phrase)
    assert sum(counted[n][1] for n in by_phrase) >= 1, counted  # custom plans, run
    assert all(counted[n][0] == 0 for n in by_phrase), counted  # never a generic plan


async def test_searches_give_the_same_pages_with_their_statements_prepared_or_not(
    store: PgDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = CorpusStream(1000, 1)
    await writes.load(store, USER, stream, True)
    store.caches[CACHE] = MemoryCopies(max_chunks=0)
    queries = [q for _, q in stream.corpus.queries][:40]
    prepared = await searched(store, tmp_path, queries)
    monkeypatch.setattr(pool, "name_of", lambda sql: None)
    assert await searched(store, tmp_path, queries) == prepared
    assert await plans(store)  # the first pass did prepare


def test_psycopg_placeholders_become_numbered_parameters_a_name_used_twice_once() -> None:
    text, values = numbered("SELECT %(a)s, %(b)s, %(a)s, 5 %% 2", {"b": 2, "a": 1})
    assert (text, values) == ("SELECT $1, $2, $1, 5 % 2", [1, 2])
    assert numbered("SELECT %s + %s", (3, 4)) == ("SELECT $1 + $2", [3, 4])


def test_a_bound_value_s_type_is_the_one_postgresql_gives_its_literal() -> None:
    assert literal_type("3") == literal_type(" -3") == "integer"
    assert literal_type("3000000000") == "bigint" and literal_type("10000000000000000000") == "numeric"
    assert literal_type("1.2") == literal_type(" -1.5") == literal_type("1e-06") == "numeric"
    assert literal_type("'{1,2}'::int2[]") == "int2[]" and literal_type("'NaN'::float8") == "float8"
    assert literal_type("'it''s'") == literal_type("'{a}'") == literal_type("NULL") == "unknown"
    assert literal_type("true") == "boolean"
    assert literal_type("E'a\\b'") is None and literal_type("'x'::\"char\"") is None  # sent as text


def test_lists_of_numbers_are_bound_as_psycopg_binds_them() -> None:
    binder = Transformer(None)
    draw = random.Random(5)
    bounds = [2**7, 2**15, 2**31, 2**63, 2**70]
    lists: list[Any] = [[draw.randrange(-b, b) for _ in range(draw.randrange(1, 12))] for b in bounds * 40]
    lists += [[b - 1] for b in bounds] + [[-b] for b in bounds] + [[-b - 1] for b in bounds] + [[0]]
    lists += [[draw.uniform(-1e6, 1e6) * 10 ** draw.randrange(-30, 30) for _ in range(5)] for _ in range(200)]
    lists += [[0.0, -0.0, 1e-06, 1e300, 5e-324]]
    for value in lists:
        assert array_literal(value) == binder.as_literal(value).decode(), value
    for other in ([], [1, None], [True], [1, 2.5], ["a"], [float("inf")], 3, "3", None, [[1]]):
        assert array_literal(other) is None  # psycopg binds these
