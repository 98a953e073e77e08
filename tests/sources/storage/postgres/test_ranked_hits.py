"""A search's hits read in its ranking's round trip: the same rows, in the same order, as read apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.postgres import bm25
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.store import PgStore
from knowledge_mcp.sources.storage.postgres.store import rows as statements
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter

pytestmark = pytest.mark.anyio
STAMP = "2026-01-01T00:00:00+00:00"
BODIES = ["wombat burrow", "wombat wombat dig", "a burrow of badgers", "wombats and badgers", "nothing"]


@pytest.mark.parametrize("text", ["wombat", "burrow OR badgers", "wombat*", '"burrow of"'])
async def test_the_hits_read_with_the_ranking_are_the_rows_read_after_it(
    store: PgDatabase, tmp_path: Path, text: str
) -> None:
    writer = PgItemWriter(store, get_source("notes"), "alice")
    notes = [
        (Path(f"{n}.md"), ParsedItem("", f"Note {n}", body, STAMP, STAMP)) for n, body in enumerate(BODIES)
    ]
    await writer.write_items(notes)
    query, weights = parse_query(text), get_source("notes").weights
    apart = await bm25.rank(store, "notes", "alice", query, 10, weights)
    read = await bm25.rank(store, "notes", "alice", query, 10, weights, reading=statements.RANKED_HITS_SQL)
    assert apart is not None and read is not None and apart.rows is None and read.rows is not None
    assert read.ranked.chunk_rowids.tolist() == apart.ranked.chunk_rowids.tolist() != []
    assert read.ranked.bm25.tolist() == apart.ranked.bm25.tolist()
    assert [r[1] for r in read.rows] == apart.ranked.chunk_rowids.tolist()  # the ranking's order kept
    hits = statements.split([r[statements.RANKED_COLUMNS :] for r in read.rows])
    pg = PgStore(store, "alice", "notes", tmp_path)
    items, chunks = apart.ranked.item_rowids.tolist(), apart.ranked.chunk_rowids.tolist()
    assert hits == await pg.hits(items, chunks)
    assert {item["title"] for item, _ in hits.values()} <= {f"Note {n}" for n in range(4)}
