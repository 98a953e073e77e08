"""The PostgreSQL ranking study's EXPLAIN ANALYZE wrapper (`experiments/postgres/explaining.py`):
which statements it explains, what it adds up, and that an explained ranking answers as the plain one."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from experiments.postgres.explaining import Explaining, Tally, is_read
from knowledge_mcp.bench.postgres.evaluation import import_corpus
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.storage.postgres import bm25
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, open_pg
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS


@pytest.mark.parametrize(
    ("sql", "read"),
    [
        ("SELECT 1", True),
        ("  with q AS (SELECT 1) SELECT * FROM q", True),
        ("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", False),
        ("SET LOCAL max_parallel_workers_per_gather = 0", False),
        ("INSERT INTO t VALUES (1)", False),
        (b"SELECT 1", False),
    ],
)
def test_only_plain_reads_are_explained(sql: object, read: bool) -> None:
    assert is_read(sql) is read


def test_a_tally_adds_each_statements_planning_and_execution_time() -> None:
    tally = Tally()
    tally.add({"Planning Time": 0.5, "Execution Time": 2.0, "Plan": {}})
    tally.add({"Planning Time": 1.25, "Execution Time": 0.5})
    assert (tally.planning_ms, tally.execution_ms, tally.statements) == (1.75, 2.5, 2)


@pytest.mark.anyio
async def test_an_explained_ranking_answers_as_the_plain_one_and_splits_planning_from_execution(
    pg_url: str,
) -> None:
    docs = [
        {"_id": "d1", "title": "Partitions", "text": "planning prunes partitions of the user"},
        {"_id": "d2", "title": "Buckets", "text": "hash buckets of users share partitions"},
    ]
    db = await open_pg(pg_url)
    try:
        await migrate(db, COMPONENT, MIGRATIONS)
        await import_corpus(db, "explained", Path("tiny"), docs)
        query = parse_query("partitions users")
        plain = await bm25.rank(db, "notes", "explained", query, 10, notes.weights)
        explaining = Explaining(db)
        seen = await bm25.rank(cast(PgDatabase, explaining), "notes", "explained", query, 10, notes.weights)
    finally:
        await db.close()
    assert plain is not None and seen is not None
    assert list(seen.ranked.item_rowids) == list(plain.ranked.item_rowids)
    assert len(plain.ranked.item_rowids) == 2
    assert explaining.tally.statements >= 3
    assert explaining.tally.planning_ms > 0 and explaining.tally.execution_ms > 0
