"""A large source on PostgreSQL is searched under the plan FTS5 searches it by on SQLite
(`store/planned.py`): the same corpus, the same queries, the same pages.

Both stores hold the bench's synthetic corpus; the memory copies are off on both, so SQLite answers
with FTS5 under its plan and PostgreSQL under the same plan in SQL. At this size common words
match more rows than the plan scores, so the plan prunes, samples and refills."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.bench import loading
from knowledge_mcp.bench.corpus import CorpusStream
from knowledge_mcp.bench.postgres import writes
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import open_pg
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS
from knowledge_mcp.sources.storage.postgres.store import PgStore
from knowledge_mcp.sources.storage.postgres.store.memory import CACHE, MemoryCopies
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio
SIZE = 3000
USER = loading.USER
SAMPLED = "most recently indexed (newest first)"
RANKED = "most recently indexed (ranked)"


def page(response: Any) -> list[tuple[str, float]]:
    return [(r.title, r.score or 0.0) for r in response.results]


@pytest.mark.parametrize(("name", "pruned"), [("notes", (SAMPLED, RANKED)), ("media", (SAMPLED,))])
async def test_a_large_source_gives_the_page_fts5s_plan_gives_on_sqlite(
    pg_url: str, tmp_path: Path, name: str, pruned: tuple[str, ...]
) -> None:
    sqlite_stream, pg_stream = CorpusStream(SIZE, 1), CorpusStream(SIZE, 1)
    await loading.load(sqlite_stream, tmp_path)
    queries = [q for _, q in sqlite_stream.corpus.queries]
    common = [q for kind, q in sqlite_stream.corpus.queries if kind == "common"]
    queries += [f"{a} {b}" for a, b in pairwise(common)]  # two common words: ranked
    source = SOURCES[name]
    pg = await open_pg(pg_url)
    db = await open_database(database_path(tmp_path, USER, name), source.migrations)
    db.memory_index_max_chunks = 0
    warned: list[str] = []
    try:
        await migrate(pg, COMPONENT, MIGRATIONS)
        await writes.load(pg, USER, pg_stream, True)
        pg.caches[CACHE] = MemoryCopies(max_chunks=0)
        lite, store = SqliteStore(db, name), PgStore(pg, USER, name, tmp_path)
        for query, offset in [(q, o) for q in queries for o in (0, 10)]:  # a second page too
            ours = await source.search(store, SearchRequest(query, limit=10, offset=offset), Defaults())
            theirs = await source.search(lite, SearchRequest(query, limit=10, offset=offset), Defaults())
            assert [t for t, _ in page(ours)] == [t for t, _ in page(theirs)], (query, offset)
            assert ours.total_estimated == theirs.total_estimated, (query, offset)
            if not ours.warnings:  # no sample: every score is bm25 over the same counts
                assert [s for _, s in page(ours)] == pytest.approx([s for _, s in page(theirs)], rel=1e-6)
            warned += [w for w in ours.warnings if "most recently indexed" in w]
    finally:
        await db.close()
        await pg.close()
    # the plan did prune here: queries sampled a common word (and, in notes, ranked the newest candidates)
    assert all(any(how in w for w in warned) for how in pruned)
