"""Semantic search through a real MCP client over stdio: a question that shares no content
word with the note that answers it finds that note, bm25 alone does not, and a quoted phrase
is answered lexically."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.search.dense.embedder import embedder
from knowledge_mcp.sources.search.dense.indexing import embed_missing
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.storage.db import database_path, open_database
from tests.conftest import FIXTURES, import_into, score_types
from tests.server.test_knowledge_e2e import stdio

pytestmark = pytest.mark.anyio
DENSE_NOTES = Path(__file__).parent.parent / "sources" / "search" / "dense" / "notes"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def embedded_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("semantic")
    folder = root / "vault"
    shutil.copytree(FIXTURES / "notes", folder, ignore=shutil.ignore_patterns("huge-field-guide.md"))
    for note in DENSE_NOTES.glob("*.md"):
        shutil.copy(note, folder)
    data_dir = root / "data"
    await import_into(data_dir, "notes", folder)
    model = embedder()
    assert model is not None
    db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
    try:
        await embed_missing(SqliteVectorStore(db, SOURCES["notes"]), model)
    finally:
        await db.close()
    return data_dir


async def search(client: Client, query: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool("knowledge_search", {"query": query, "limit": 3, "seen": "show", **args})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def titles(response: dict[str, Any]) -> list[str]:
    return [r["title"] for r in response["results"]]


async def test_over_stdio_a_question_finds_its_note_by_meaning_and_not_by_words(embedded_vault: Path) -> None:
    # The first search waits for the model (tests/server/test_model_loading.py: not waiting).
    async with stdio(embedded_vault, KNOWLEDGE_MCP_LOAD_MODEL_IN_BACKGROUND="false") as client:
        question = "which novels did I enjoy last summer?"
        hybrid = await search(client, question)
        assert "July reading" in titles(hybrid)
        assert set(score_types(hybrid)) == {"hybrid"}
        assert hybrid["query_type"] == "semantic" and "degraded" not in hybrid

        lexical = await search(client, question, mode="lexical", limit=10)
        assert "July reading" not in titles(lexical)

        phrase = await search(client, '"gave up on the Pynchon"')
        assert phrase["query_type"] == "exact"
        assert titles(phrase) == ["July reading"] and score_types(phrase)[0] == "fts"

        notes_tool = await client.call_tool("notes_search", {"query": "who fixed the heating?", "limit": 3})
        assert notes_tool.structured_content is not None
        assert "Boiler service" in titles(notes_tool.structured_content)
