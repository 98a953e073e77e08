"""The dense stage's coverage check costs no round trip while the source's generation, read by the
search's statistics (`store/stats.index_sizes`), is the one its coverage was counted at; a write
(in this process, or another's seen through the statistics) makes it count again."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.postgres.embeddings.store import PgVectorStore
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, open_pg
from knowledge_mcp.sources.storage.postgres.store.stats import index_sizes
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter
from knowledge_mcp.sources.storage.vector_store import Coverage

from .test_vectors import STAMP

pytestmark = pytest.mark.anyio


async def write_note(store: PgDatabase, title: str) -> None:
    writer = PgItemWriter(store, notes, "alice")
    await writer.write_item(Path(f"{title}.md"), ParsedItem("", title, f"text of {title}", STAMP, STAMP))


async def searched(store: PgDatabase) -> None:
    """What a search reads first: the source's statistics (and its generation)."""
    await index_sizes(store, "alice", "notes", parse_query("text"))


async def test_the_coverage_check_after_a_search_s_statistics_sends_no_statement(
    store: PgDatabase, statements: list[str]
) -> None:
    for title in ("Alpha", "Beta"):
        await write_note(store, title)
    vectors = PgVectorStore(store, "alice", "notes")
    assert await vectors.look() == (Coverage(2, 0), True)
    await searched(store)
    statements.clear()
    assert await vectors.look() == (Coverage(2, 0), True)
    assert statements == []


async def test_a_note_written_in_this_process_is_counted_at_the_next_coverage_check(
    store: PgDatabase,
) -> None:
    await write_note(store, "Alpha")
    vectors = PgVectorStore(store, "alice", "notes")
    await searched(store)
    assert await vectors.look() == (Coverage(1, 0), True)
    await write_note(store, "Beta")
    assert await vectors.look() == (Coverage(2, 0), True)


async def test_a_note_written_by_another_process_is_counted_once_a_search_reads_the_new_generation(
    store: PgDatabase, pg_url: str
) -> None:
    await write_note(store, "Alpha")
    vectors = PgVectorStore(store, "alice", "notes")
    await searched(store)
    assert await vectors.look() == (Coverage(1, 0), True)
    other = await open_pg(pg_url)
    try:
        await write_note(other, "Beta")
    finally:
        await other.close()
    await searched(store)
    assert await vectors.look() == (Coverage(2, 0), True)
