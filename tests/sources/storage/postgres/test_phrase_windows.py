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
from knowledge_mcp.sources.storage.postgres.postings.phrase_match import read, read_phrase
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


async def test_a_phrase_read_on_a_connection_outside_a_transaction_sends_the_user_with_each_window(
    store: PgDatabase, statements: list[str]
) -> None:
    writer = PgItemWriter(store, notes, "alice")
    items = [
        (
            Path(f"n{n}.md"),
            ParsedItem("", f"N {n}", "the naix" if n % 7 == 0 else "naix and the", STAMP, STAMP),
        )
        for n in range(300)
    ]
    await writer.write_items(items)
    async with store.transaction() as conn:  # the user set by the caller's transaction
        await as_user(conn, "alice")
        expected = await NewestPhrase("alice", "notes", Term(("the", "naix"))).at_least(conn, 20)
    statements.clear()
    async with store.connection() as conn:  # as `store/planned.py` reads a phrase's windows
        found = await NewestPhrase("alice", "notes", Term(("the", "naix"))).at_least(conn, 20)
        assert conn.info.transaction_status.name == "IDLE"  # nothing left open
    sent = [" ".join(s.split()) for s in statements]  # the words' counts, then each window
    assert found == expected and len(found[0].chunks) >= 20
    assert sent and all(s.startswith("SELECT set_config('knowledge.user_id', 'alice', true);") for s in sent)
    assert "pg_term_docs" in sent[0] and all("WITH w AS" in s for s in sent[1:])  # one round trip each


async def test_a_phrase_over_every_chunk_reads_its_rarest_word_and_the_others_near_it_in_one_statement(
    store: PgDatabase, statements: list[str]
) -> None:
    writer = PgItemWriter(store, notes, "alice")
    texts = [f"the naix {'river' if n % 3 else 'hill'} and more" for n in range(400)]
    texts += [f"naix river {n}" for n in range(30)]
    items = [(Path(f"n{n}.md"), ParsedItem("", f"N {n}", t, STAMP, STAMP)) for n, t in enumerate(texts)]
    await writer.write_items(items)
    async with store.connection() as conn:
        statements.clear()
        found = await read_phrase(conn, "alice", "notes", ["hill", "naix", "river"])
        sent = list(statements)
        rarest = await read(conn, "alice", "notes", ["hill"])  # the two statements it took before
        near = rarest["hill"].chunks
        others = await read(conn, "alice", "notes", ["naix", "river"], near=near, with_rows=False)
    assert len(sent) == 1 and "WITH w AS" in sent[0]
    assert len(near) == 134 and set(found) == {"hill", "naix", "river"}
    for lexeme, postings in (rarest | others).items():
        mine = found[lexeme]
        assert [a.tolist() for a in (mine.chunks, mine.items, mine.dls, mine.keys)] == [
            a.tolist() for a in (postings.chunks, postings.items, postings.dls, postings.keys)
        ]
