"""A sampled phrase whose rarest word is in fewer chunks than the words kept (`MIN_DOCS`) is read
in one window of that word's chunks when it is not in its newest ones, where windows of as many
chunks as hits wanted, then eight times more, took several statements."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.search.query import Term
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.postgres.phrases import NewestPhrase
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.schema import as_user
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter

from .test_vectors import STAMP

pytestmark = pytest.mark.anyio


async def test_a_phrase_only_in_the_oldest_chunks_of_its_rarest_word_is_read_in_one_window(
    store: PgDatabase, statements: list[str]
) -> None:
    writer = PgItemWriter(store, notes, "alice")
    items = [
        (Path(f"old{n}.md"), ParsedItem("", f"Old {n}", "we saw the naix there", STAMP, STAMP))
        for n in range(3)
    ]
    items += [
        (Path(f"new{n}.md"), ParsedItem("", f"New {n}", "naix and the river", STAMP, STAMP))
        for n in range(150)
    ]
    await writer.write_items(items)
    phrase = NewestPhrase("alice", "notes", Term(("the", "naix")))
    statements.clear()
    async with store.transaction() as conn:
        await as_user(conn, "alice")
        hits, everything = await phrase.at_least(conn, 3)
    windows = [s for s in statements if s.lstrip().startswith("WITH w AS")]
    assert (len(hits.chunks), everything, len(windows)) == (3, True, 1)
