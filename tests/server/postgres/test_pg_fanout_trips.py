"""knowledge_search on the PostgreSQL item store reads every source's term statistics in one round
trip (`store/stats.joint_sizes`), and ranks as it did with one round trip per source: the same
page as the SQLite files give. Statements are counted, not timed."""

from __future__ import annotations

from typing import Any

import pytest

from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.postgres.prepared import name_of, prepared
from knowledge_mcp.sources.storage.postgres.store.stats import STATS_SQL

from ...conftest import call
from ...sources.storage.postgres.conftest import record_statements
from .conftest import Importing
from .test_pg_search import assert_same_page, import_every_source

pytestmark = pytest.mark.anyio
QUERIES = ["captain", "meeting notes", "python*", "solar panel*", "the"]


async def test_knowledge_search_reads_every_source_s_statistics_in_one_round_trip(
    pg_servers: Any, import_both: Importing, monkeypatch: pytest.MonkeyPatch
) -> None:
    await import_every_source(import_both)
    stats = f"EXECUTE {name_of(prepared(STATS_SQL))}"
    async with pg_servers("sqlite") as lite, pg_servers("postgresql") as pg:
        await call(pg, "knowledge_search", query="warm up", seen="show")  # connections, prepared statements
        sent = record_statements(monkeypatch, lambda s: s if stats in s else None)
        for query in QUERIES:
            sent.clear()
            page = await call(pg, "knowledge_search", query=query, seen="show")
            assert len(sent) == 1, query  # one round trip ...
            assert sent[0].count(stats) == len(SOURCES), query  # ... with every source's statistics
            assert_same_page(await call(lite, "knowledge_search", query=query, seen="show"), page)
