"""Fresh planner statistics after bulk writes: migrate --to and large imports ANALYZE the
user's partitions (`analyzing.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.postgres.copying import copy_source
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.schema import partition_name
from knowledge_mcp.sources.storage.postgres.writers.analyzing import MANY_CHUNKS, needs_analyze
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter

FIXTURES = Path(__file__).parents[4] / "fixtures"
TABLES = ("pg_items", "pg_chunks", "pg_posting_blocks", "pg_term_docs", "pg_chunk_vectors")
STATS_SQL = """SELECT c.relname, c.reltuples, coalesce(s.analyze_count, 0), s.last_analyze
    FROM pg_class AS c LEFT JOIN pg_stat_user_tables AS s ON s.relid = c.oid
    WHERE c.relname = ANY(%s::text[])"""


@pytest.mark.parametrize(
    ("written", "total", "expected"),
    [
        (0, 0, False),  # nothing written
        (0, 50_000, False),
        (5, 6, True),  # a first small import: all of the user's chunks
        (10, 100, True),  # exactly a tenth
        (9, 100, False),  # less than a tenth
        (MANY_CHUNKS, 10_000_000, True),  # many chunks, however large the user
        (MANY_CHUNKS - 1, 10_000_000, False),
    ],
)
def test_a_run_is_analyzed_when_it_wrote_many_chunks_or_a_tenth_of_the_users(
    written: int, total: int, expected: bool
) -> None:
    assert needs_analyze(written, total) is expected


async def _stats(store: PgDatabase, user: str) -> dict[str, tuple[float, int, object]]:
    names = [partition_name(t, user) for t in TABLES]
    async with store.transaction() as conn:
        rows = await (await conn.execute(STATS_SQL, (names,))).fetchall()
    by_name = {r[0]: (float(r[1]), int(r[2]), r[3]) for r in rows}
    return {t: by_name[partition_name(t, user)] for t in TABLES}


@pytest.mark.anyio
async def test_after_a_copy_every_partition_of_the_user_has_planner_statistics(
    store: PgDatabase, tmp_path: Path
) -> None:
    source = get_source("notes")
    lite = await open_database(database_path(tmp_path, "local", "notes"), source.migrations)
    try:
        await Importer(source, lite).run([FIXTURES / "notes"])
        report = await copy_source(lite, store, source, "local")
    finally:
        await lite.close()
    assert report.verified
    stats = await _stats(store, "local")
    for table, (reltuples, analyzed, last) in stats.items():
        assert reltuples >= 0 and analyzed >= 1 and last is not None, table  # -1: never analyzed
    assert stats["pg_items"][0] == report.postgres[0]
    assert stats["pg_chunks"][0] == report.postgres[1]


@pytest.mark.anyio
async def test_an_import_that_changes_nothing_leaves_the_statistics_alone(store: PgDatabase) -> None:
    source = get_source("prompts")
    first = await PgItemWriter(store, source, "ann").run([FIXTURES / "prompts"])
    assert first.added > 0
    before = await _stats(store, "ann")
    assert before["pg_items"][0] == first.added  # the first import: all of ann's chunks, analyzed
    again = await PgItemWriter(store, source, "ann").run([FIXTURES / "prompts"])
    assert again.unchanged == first.added
    after = await _stats(store, "ann")
    assert [after[t][1] for t in TABLES] == [before[t][1] for t in TABLES]
