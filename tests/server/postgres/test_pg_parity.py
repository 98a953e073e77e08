"""A get anchored by a query starts where it does on SQLite: at the item's best chunk by bm25 (FTS5's
unweighted `bm25()`), read through real MCP clients of a SQLite and a PostgreSQL server."""

from __future__ import annotations

from typing import Any

import pytest

from ...conftest import call
from .conftest import Importing

pytestmark = pytest.mark.anyio

ANCHORED = {
    "media": [
        "the",
        "panel OR roof OR inverter",
        "pasta OR sauce",
        "sqlite OR page OR btree",
        "agenda OR budget",
    ],
    "notes": ["the", "flour OR water OR salt", "backup OR restic", "git OR branch"],
    "chats": ["the", "boiler OR landlord", "whisky OR ferry"],
}


@pytest.mark.parametrize("source", list(ANCHORED))
async def test_a_get_anchored_by_a_query_starts_at_the_chunk_sqlite_starts_at(
    pg_servers: Any, import_both: Importing, source: str
) -> None:
    await import_both(source)
    anchors: set[str] = set()
    async with pg_servers("sqlite") as lite, pg_servers("postgresql") as pg:
        every = await call(lite, "knowledge_search", query="the", sources=[source], mode="lexical", limit=20)
        for hit in every["results"]:
            for query in ANCHORED[source]:
                args = {"uri": hit["uri"], "query": query, "retrieval": {"mode": "chunk"}}
                ours, theirs = (
                    await call(pg, "knowledge_get", **args),
                    await call(lite, "knowledge_get", **args),
                )
                assert ours["meta"].get("loc") == theirs["meta"].get("loc"), (hit["uri"], query)
                assert ours["content"] == theirs["content"], (hit["uri"], query)
                anchors.add(hit["uri"] + repr(theirs["meta"].get("loc")))
    assert len(anchors) > len(every["results"]), "some item is anchored in two places by two queries"
