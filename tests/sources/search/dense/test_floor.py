"""The floor of the fused ranking: a query no word of which occurs, and nothing near in meaning,
finds nothing (and says so), in hybrid and in semantic mode; a real question still answers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.dense.fusion import FLOOR_WARNING
from knowledge_mcp.sources.search.request import SearchMode, SearchRequest
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from tests.sources.search.dense.test_hybrid_search import QUESTION, vault

pytestmark = pytest.mark.anyio
NONSENSE = ["qzxvbnm wrtplkj", "flurbotinex"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def embedded(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Database]:
    data_dir = await vault(tmp_path_factory.mktemp("floor"), embed=True)
    db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
    yield db
    await db.close()


async def search(db: Database, query: str, mode: SearchMode) -> Any:
    return await notes.search(SqliteStore(db, "notes"), SearchRequest(query, mode=mode, limit=10), Defaults())


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "auto"])
@pytest.mark.parametrize("query", NONSENSE)
async def test_a_query_of_unknown_words_and_no_close_meaning_finds_nothing(
    embedded: Database, query: str, mode: SearchMode
) -> None:
    response = await search(embedded, query, mode)
    assert response.results == [] and response.total_estimated == 0
    assert FLOOR_WARNING in response.warnings and "random letters" in FLOOR_WARNING


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
async def test_a_real_question_in_other_words_still_answers(embedded: Database, mode: SearchMode) -> None:
    response = await search(embedded, QUESTION, mode)
    assert "July reading" in [r.title for r in response.results[:3]]
    assert not any("nothing close" in w for w in response.warnings)


async def test_a_query_whose_words_occur_is_never_cut_by_the_floor(embedded: Database) -> None:
    response = await search(embedded, "qzxvbnm sourdough", "hybrid")
    assert response.results and response.results[0].title == "Sourdough Country Loaf"
