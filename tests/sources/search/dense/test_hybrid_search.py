"""Hybrid search on real notes: a question in other words finds its note, a mode overrides
the route, and a missing model or missing vectors leave every search lexical, saying so."""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.dense import embedder as embedders
from knowledge_mcp.sources.search.dense.indexing import embed_missing
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.search.request import SearchMode, SearchRequest
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from tests.conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio
NOTES = Path(__file__).parent / "notes"
QUESTION = "which novels did I enjoy last summer?"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


async def vault(root: Path, embed: bool) -> Path:
    """fixtures/notes (but its 66 KB field guide: a fast test) and the three notes of this
    folder, imported (and embedded)."""
    folder = root / "vault"
    shutil.copytree(FIXTURES / "notes", folder, ignore=shutil.ignore_patterns("huge-field-guide.md"))
    for note in NOTES.glob("*.md"):
        shutil.copy(note, folder)
    data_dir = root / "data"
    await import_into(data_dir, "notes", folder)
    if embed:
        db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
        model = embedders.embedder()
        assert model is not None
        await embed_missing(SqliteVectorStore(db, SOURCES["notes"]), model)
        await db.close()
    return data_dir


@pytest.fixture(scope="module")
async def embedded(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Database]:
    data_dir = await vault(tmp_path_factory.mktemp("embedded"), embed=True)
    db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
    yield db
    await db.close()


async def search(db: Database, query: str, mode: SearchMode = "auto", **more: Any) -> Any:
    return await notes.search(SqliteStore(db, "notes"), SearchRequest(query, mode=mode, **more), Defaults())


def titles(response: Any) -> list[str]:
    return [r.title for r in response.results]


async def test_a_question_in_other_words_finds_its_note_by_meaning(embedded: Database) -> None:
    response = await search(embedded, QUESTION, limit=3)
    assert "July reading" in titles(response)
    assert response.query_type == "semantic" and not response.degraded
    assert {r.score_type for r in response.results} == {"hybrid"}
    scores = [r.score for r in response.results]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
    heating = await search(embedded, "who fixed the heating?", limit=3)
    assert "Boiler service" in titles(heating)


async def test_the_same_question_searched_lexically_misses_it(embedded: Database) -> None:
    response = await search(embedded, QUESTION, "lexical", limit=10)
    assert "July reading" not in titles(response)
    assert {r.score_type for r in response.results} <= {"fts"}


async def test_a_quoted_phrase_is_answered_by_bm25_alone(embedded: Database) -> None:
    response = await search(embedded, '"gave up on the Pynchon"')
    assert response.query_type == "exact"
    assert titles(response) == ["July reading"]
    assert response.results[0].score_type == "fts" and not response.degraded


async def test_semantic_mode_ranks_by_the_embeddings_alone(embedded: Database) -> None:
    response = await search(embedded, '"gave up on the Pynchon"', "semantic", limit=3)
    assert titles(response)[0] == "July reading"
    assert {r.score_type for r in response.results} == {"dense"}


async def test_hybrid_pages_continue_where_the_last_page_ended(embedded: Database) -> None:
    whole = await search(embedded, QUESTION, "hybrid", limit=8)
    first = await search(embedded, QUESTION, "hybrid", limit=4)
    second = await search(embedded, QUESTION, "hybrid", limit=4, offset=first.next_offset)
    assert first.has_more and titles(first) + titles(second) == titles(whole)
    assert [r.rank for r in second.results] == [5, 6, 7, 8]


async def test_a_date_order_with_mode_hybrid_stays_lexical_and_says_why(embedded: Database) -> None:
    response = await search(embedded, "reading", "hybrid", order_by="recent")
    assert response.results and {r.score_type for r in response.results} == {"fts"}
    assert any("semantic search skipped" in w for w in response.warnings)


async def test_while_vectors_are_missing_results_are_lexical_and_say_how_far_the_index_is(
    tmp_path: Path,
) -> None:
    data_dir = await vault(tmp_path, embed=False)
    db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
    try:
        response = await search(db, "boiler pressure engineer")
        chunks = (await db.fetchall("SELECT count(*) FROM notes_chunks"))[0][0]
        assert response.degraded is True
        assert f"dense index 0 % built (vectors: 0 of {chunks:,} chunks)" in (response.provider_hint or "")
        assert titles(response)[0] == "Boiler service"
        assert {r.score_type for r in response.results} == {"fts"}
    finally:
        await db.close()


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """onnxruntime as if it were not installed (its import fails), the model forgotten."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    embedders.reset()
    yield
    monkeypatch.undo()
    embedders.reset()


async def test_without_the_model_every_mode_answers_lexically_and_says_so(
    embedded: Database, no_model: None
) -> None:
    assert embedders.embedder() is None
    for mode in ("auto", "hybrid", "semantic"):
        response = await search(embedded, "boiler pressure", mode)  # type: ignore[arg-type]
        assert titles(response)[0] == "Boiler service"
        assert response.degraded is True and "semantic search is off" in (response.provider_hint or "")
        assert {r.score_type for r in response.results} == {"fts"}
