"""`bench/store_calls.py`: the per-source search and get both benches time, called the same way on
a SQLite store and a PostgreSQL store holding the same corpus (no times asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.bench import loading
from knowledge_mcp.bench.corpus import CorpusStream
from knowledge_mcp.bench.postgres import writes
from knowledge_mcp.bench.store_calls import GET_MODES, Searched, get_times, search_times
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import open_pg
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS
from knowledge_mcp.sources.storage.postgres.store import PgStore
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore

SIZE = 150
USER = loading.USER


def assert_every_query_timed(searched: Searched, queries: list[str], gets: dict[str, list[float]]) -> None:
    assert searched.queries == len(searched.ms) == len(queries) and searched.errors == 0
    assert 0 < len(searched.firsts) == searched.with_hits
    assert all(q in queries for _, q in searched.firsts)
    assert set(gets) == set(GET_MODES)
    assert all(len(ms) == len(searched.firsts) and min(ms) > 0 for ms in gets.values())


@pytest.mark.anyio
async def test_both_stores_time_every_query_and_read_every_first_hit_in_every_mode(
    pg_url: str, tmp_path: Path
) -> None:
    sqlite_stream, pg_stream = CorpusStream(SIZE, 1), CorpusStream(SIZE, 1)
    await loading.load(sqlite_stream, tmp_path)
    pg = await open_pg(pg_url)
    try:
        await migrate(pg, COMPONENT, MIGRATIONS)
        await writes.load(pg, USER, pg_stream, True)
        queries = [q for _, q in sqlite_stream.corpus.queries]
        assert queries == [q for _, q in pg_stream.corpus.queries]
        for name, source in SOURCES.items():
            path = database_path(tmp_path, USER, name)
            db = await open_database(path, source.migrations)
            try:
                lite = SqliteStore(db, name)
                on_sqlite = await search_times(source, lite, queries, "lexical")
                assert_every_query_timed(on_sqlite, queries, await get_times(source, lite, on_sqlite.firsts))
            finally:
                await db.close()
            store = PgStore(pg, USER, name, path)
            on_pg = await search_times(source, store, queries, "lexical")
            assert_every_query_timed(on_pg, queries, await get_times(source, store, on_pg.firsts))
            # The same queries find something on both stores (their rankings may order ties apart).
            assert on_sqlite.with_hits == on_pg.with_hits, name
    finally:
        await pg.close()
