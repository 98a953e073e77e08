"""A large source's vocabulary turns a prefix into an OR of its index terms that matches exactly
the rows FTS5's own prefix query matches, and is never used once the database has changed."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.lexical import memory_index, vocabulary
from knowledge_mcp.sources.search.lexical.term_stats import IndexStats, TermStats
from knowledge_mcp.sources.search.lexical.vocabulary import Vocabulary
from knowledge_mcp.sources.search.query import parse_query, words_of
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.search.stemming import stems
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from tests.conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio

# Words whose porter stem is not stemmed back to itself when queried (`abases` is indexed as
# `abas`, and `abas` queried is `aba`): the expansion must still match exactly FTS5's rows.
AWKWARD = "The abases of abacus makers abandoned abbeys; cheastoses and bruckases were caresses."


@pytest.fixture
async def notes_db(tmp_path: Path) -> AsyncIterator[Database]:
    await import_into(tmp_path, "notes", FIXTURES / "notes")
    db = await open_database(database_path(tmp_path, "local", "notes"), notes.migrations)
    stamp = "2026-11-01T09:00:00Z"
    await Importer(notes, db).write_item(
        Path("awkward"), ParsedItem("awkward", "Abbeys", AWKWARD, stamp, stamp)
    )
    yield db
    await db.close()


def rows(conn: sqlite3.Connection, expression: str) -> set[int]:
    sql = "SELECT rowid FROM notes_chunks_fts WHERE notes_chunks_fts MATCH ?"
    return {rowid for (rowid,) in conn.execute(sql, (expression,))}


def built(db: Database) -> Vocabulary:
    found = memory_index.build(db.path, "notes", notes.weights, 0)  # 0: too large to copy
    assert isinstance(found, Vocabulary)
    return found


async def test_every_expansion_matches_exactly_the_rows_of_fts5s_own_prefix_query(notes_db: Database) -> None:
    vocab = built(notes_db)
    conn = sqlite3.connect(notes_db.path)
    # Prefixes as people type them: the first 2-6 letters of every word in the notes.
    texts = [row[0] for row in conn.execute("SELECT content FROM notes_items")]
    words = {w for text in texts for w in words_of(text)}
    prefixes = sorted({w[:n] for w in words for n in range(2, 7) if len(w) >= n})
    expanded = 0
    for prefix in prefixes:
        expansion = vocab.expansion(prefix)
        if expansion is None:
            continue
        expanded += 1
        assert rows(conn, expansion) == rows(conn, f'"{prefix}" *'), prefix
    conn.close()
    assert expanded > 0.9 * len(prefixes)  # almost every prefix is expanded


async def test_an_index_term_that_porter_would_stem_again_is_matched_as_its_own_prefix(
    notes_db: Database,
) -> None:
    vocab = built(notes_db)
    assert stems(["abas"]) == ["aba"]  # `abas` is in the index (from `abases`), queried it is `aba`
    expansion = vocab.expansion("ab")
    assert expansion is not None and '"abas" *' in expansion
    conn = sqlite3.connect(notes_db.path)
    assert rows(conn, expansion) == rows(conn, '"ab" *')
    conn.close()


async def test_a_prefix_with_too_many_terms_or_none_or_non_ascii_stays_fts5s(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    vocab = built(notes_db)
    assert vocab.expansion("zzqx") is None  # no term
    assert vocab.expansion("café") is None  # left to FTS5's tokenizer
    monkeypatch.setattr(vocabulary, "MAX_EXPANSION", 2)
    assert vocab.expansion("ab") is None


async def test_prefix_searches_of_a_large_source_answer_as_fts5_alone_would(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes_db.memory_index_max_chunks = 0  # every source is "large": FTS5 plus the vocabulary
    indexes = notes.memory_indexes(notes_db)
    assert await indexes.ready() is None and indexes.vocabulary is not None
    requests = [SearchRequest(q, limit=5) for q in ("bre*", "ab*", "sourdough bre*", "po*", '"rest api" de*')]
    # Tiny caps: every prefix is a sampled or candidate term, where the expansion stands in.
    for name, value in (("EXACT_CAP", 0), ("CANDIDATE_CAP", 1), ("PER_RESULT", 0), ("REFILL_CAP", 0)):
        monkeypatch.setattr(f"knowledge_mcp.sources.search.lexical.plan.{name}", value)
    for request in requests:
        with_terms = await notes.search(SqliteStore(notes_db, "notes"), request, Defaults())
        with monkeypatch.context() as m:
            m.setattr(indexes, "terms", lambda: None)
            alone = await notes.search(SqliteStore(notes_db, "notes"), request, Defaults())
        assert [(r.id, r.score) for r in with_terms.results] == [(r.id, r.score) for r in alone.results]
        assert with_terms.total_estimated == alone.total_estimated


async def test_a_vocabulary_is_not_used_once_the_database_changed(notes_db: Database) -> None:
    notes_db.memory_index_max_chunks = 0
    indexes = notes.memory_indexes(notes_db)
    await indexes.ready()
    before = indexes.terms()
    assert before is not None and "zymurgy" not in before.terms
    stamp = "2026-11-02T09:00:00Z"
    await Importer(notes, notes_db).write_item(
        Path("brewing"),
        ParsedItem("brewing", "Zymurgy", "Zymurgy is the chemistry of brewing.", stamp, stamp),
    )
    assert indexes.terms() is None  # changed: FTS5's prefixes until the new one is read
    found = await notes.search(SqliteStore(notes_db, "notes"), SearchRequest("zymu*"), Defaults())
    assert [r.title for r in found.results] == ["Zymurgy"]
    await indexes.ready()
    after = indexes.terms()
    assert after is not None and "zymurgi" in after.terms


async def test_a_search_rerun_without_a_stale_vocabulary_warns_once(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes_db.memory_index_max_chunks = 0
    indexes = notes.memory_indexes(notes_db)
    await indexes.ready()
    caps = (("EXACT_CAP", 0), ("CANDIDATE_CAP", 1), ("PER_RESULT", 0), ("SAMPLE_CAP", 2), ("REFILL_CAP", 0))
    for name, value in caps:
        monkeypatch.setattr(f"knowledge_mcp.sources.search.lexical.plan.{name}", value)
    monkeypatch.setattr(indexes, "still", lambda _: False)  # a commit came in during the search
    found = await notes.search(SqliteStore(notes_db, "notes"), SearchRequest("th*", limit=5), Defaults())
    sampled = [w for w in found.warnings if "most recently indexed" in w]
    assert len(sampled) == 1, found.warnings


async def test_a_prefix_is_counted_through_the_vocabulary_as_fts5_alone_would_count_it(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """knowledge_search counts each source's query terms (`Store.index_stats`) before the search."""
    notes_db.memory_index_max_chunks = 0
    indexes = notes.memory_indexes(notes_db)
    await indexes.ready()
    queries = [parse_query(q) for q in ("bre*", "ab*", "sourdough bre*", "po* ab*", '"rest api" de*')]
    store = SqliteStore(notes_db, "notes")
    expanded: list[Mapping[str, str] | None] = []
    lookup = TermStats.lookup

    async def spy(
        self: TermStats, db: Database, terms: list[str], same_rows: Mapping[str, str] | None = None
    ) -> IndexStats:
        expanded.append(same_rows)
        return await lookup(self, db, terms, same_rows)

    monkeypatch.setattr(TermStats, "lookup", spy)
    with_terms = [await store.index_stats(q) for q in queries]
    assert all(expanded[:4])  # the prefixes were read as their index terms (`de` has too many)
    notes_db.caches.pop("term_stats")  # counted again from nothing, by FTS5's own prefix queries
    with monkeypatch.context() as m:
        m.setattr(indexes, "terms", lambda: None)
        alone = [await store.index_stats(q) for q in queries]
    assert not any(expanded[len(queries) :])
    assert with_terms == alone
    assert any(n > 0 for stats in with_terms for n in stats.df.values())


async def test_an_expansion_is_remembered_and_the_memory_is_bounded(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    vocab = built(notes_db)
    first = vocab.expansion("ab")
    assert first is not None and vocab.expansion("ab") == first == vocab.expanded("ab")
    monkeypatch.setattr(vocabulary, "MAX_EXPANSION", 2)
    assert vocab.expansion("ab") == first  # remembered: not worked out again
    assert vocab.expanded("ab") is None
    monkeypatch.setattr(vocabulary, "MAX_REMEMBERED", 3)
    for word in ["ba", "ca", "da", "ea"]:
        vocab.expansion(word)
    assert len(vocab._expanded) <= 3
