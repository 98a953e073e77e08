"""What the PostgreSQL item store still does not do, by design for now, and says so.

Filters, field-limited search, `per_item`, semantic and hybrid search, transcripts and writes all
run on PostgreSQL (test_pg_contract_tools.py, test_pg_filters.py, test_pg_dense.py,
test_pg_writes.py). Left (docs/postgresql.md, "PostgreSQL item store"): a semantic or hybrid search WITH a
source filter answers lexically — the filtered lexical page — and says so (`degraded`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.search.dense.retriever import FILTERS_HINT
from tests.conftest import PgFixtures, call, store_settings

pytestmark = pytest.mark.anyio

FILTERED = [
    ("notes_search", {"query": "recipe OR eggs OR flour OR water", "keywords": ["cooking"]}),
    ("media_search", {"query": "the", "media_types": ["transcript"]}),
    ("media_search", {"query": "the", "date_from": "2020-01-01"}),
]
"""(tool, a search with an item-level source filter that finds something on the fixtures). A filter
on parts of items (chats' `sender`) or a field limit skips semantic search on both stores alike,
with a warning (tests/sources/), so it is not here."""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def server(pg_fixtures: PgFixtures) -> AsyncIterator[Any]:
    settings = store_settings("postgresql", pg_fixtures.url)
    mcp, host = build_server(Settings(data_dir=pg_fixtures.data_dir, **settings))
    try:
        yield mcp
    finally:
        await host.close()


@pytest.fixture
async def pg(server: Any) -> AsyncIterator[Any]:
    async with Client(server) as client:
        yield client


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
@pytest.mark.parametrize(("tool", "arguments"), FILTERED)
async def test_a_semantic_search_with_a_source_filter_on_postgresql_is_the_filtered_lexical_page(
    pg: Any, tool: str, arguments: dict[str, Any], mode: str
) -> None:
    lexical = await call(pg, tool, **arguments, mode="lexical")
    page = await call(pg, tool, **arguments, mode=mode)
    assert lexical["results"], "the filter finds something on the fixtures"
    assert [h["uri"] for h in page["results"]] == [h["uri"] for h in lexical["results"]]
    assert page["count"] == lexical["count"]
    assert page["degraded"] is True and FILTERS_HINT in page["provider_hint"]
    assert "degraded" not in lexical
