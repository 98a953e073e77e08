"""The check set of the semantic floor: everyday questions that share no word with any note find
their note in the top 3 (by meaning, with a low score and a reason that says so), while queries
of random letters and off-topic questions find nothing and say why, in `notes_search` and in
`knowledge_search`. The set (`everyday/`) is kept out of the floor's fit
(`experiments/dense/evidence.py`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.dense import embedder as embedders
from knowledge_mcp.sources.search.dense.fusion import FLOOR_WARNING
from knowledge_mcp.sources.search.dense.indexing import embed_missing
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.search.request import SearchMode, SearchRequest
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from tests.conftest import call, import_into

pytestmark = pytest.mark.anyio
EVERYDAY = Path(__file__).parent / "everyday"
CHECK = json.loads((EVERYDAY / "questions.json").read_text(encoding="utf-8"))
QUESTIONS: dict[str, str] = CHECK["questions"]
EMPTY: list[str] = CHECK["nonsense"] + CHECK["off_topic"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The check set's notes, imported and embedded."""
    data = tmp_path_factory.mktemp("everyday") / "data"
    await import_into(data, "notes", EVERYDAY / "notes")
    db = await open_database(database_path(data, "local", "notes"), notes.migrations)
    model = embedders.embedder()
    assert model is not None, "the semantic extra is installed (make install; CI installs it)"
    await embed_missing(SqliteVectorStore(db, SOURCES["notes"]), model)
    await db.close()
    return data


@pytest.fixture(scope="module")
async def embedded(data_dir: Path) -> AsyncIterator[Database]:
    db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
    yield db
    await db.close()


async def search(db: Database, query: str, mode: SearchMode = "hybrid") -> Any:
    request = SearchRequest(query, mode=mode, limit=10, fields=frozenset({"reason"}))
    return await notes.search(SqliteStore(db, "notes"), request, Defaults())


@pytest.mark.parametrize("question", list(QUESTIONS))
async def test_an_everyday_question_finds_its_note_in_the_top_three(
    embedded: Database, question: str
) -> None:
    response = await search(embedded, question)
    assert QUESTIONS[question] in [r.title for r in response.results[:3]], [r.title for r in response.results]
    assert not any(r.matched_terms for r in response.results), "the check set shares no word with the notes"
    assert FLOOR_WARNING not in response.warnings


async def test_a_meaning_match_has_a_low_score_and_says_it_is_a_semantic_match(embedded: Database) -> None:
    for mode in ("hybrid", "semantic"):
        response = await search(embedded, "our kitty's jabs at the animal doctor", mode)
        first = response.results[0]
        assert first.title == "Milo's vaccinations"
        assert first.reason == "semantic match"
        assert first.score < 0.5


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "auto"])
async def test_nonsense_and_off_topic_queries_find_nothing_and_say_why(
    embedded: Database, mode: SearchMode
) -> None:
    for query in EMPTY:
        response = await search(embedded, query, mode)
        assert response.results == [] and response.total_estimated == 0, query
        assert FLOOR_WARNING in response.warnings, query


async def test_the_tools_of_one_source_and_of_all_sources_apply_the_same_floor(data_dir: Path) -> None:
    mcp, services = build_server(Settings(data_dir=data_dir, embed_in_background=False))
    try:
        async with Client(mcp) as client:
            for tool, more in (("notes_search", {}), ("knowledge_search", {"seen": "show"})):
                found = await call(client, tool, query="refreshing the wooden hut behind the yard", **more)
                assert "Painting the garden shed" in [hit["title"] for hit in found["results"][:3]], tool
                empty = await call(client, tool, query="blorptastic quandrix", **more)
                assert empty["results"] == [], tool
                assert FLOOR_WARNING in empty["warnings"], tool
    finally:
        await services.close()
