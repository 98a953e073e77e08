"""The approximate dense index (usearch) on real notes, forced over a low threshold: it answers
as the exact index does, is rebuilt from the database when its file is gone or corrupt, takes
in vectors added later, and each user's is their own."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.dense import embedder as embedders
from knowledge_mcp.sources.search.dense.ann import store as ann
from knowledge_mcp.sources.search.dense.ann.store import AnnIndex, index_path
from knowledge_mcp.sources.search.dense.indexing import embed_missing
from knowledge_mcp.sources.search.dense.sqlite.index import DenseIndex, dense_indexes
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.search.request import SearchMode, SearchRequest
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from tests.conftest import import_into

from .test_hybrid_search import NOTES, QUESTION, vault

pytestmark = pytest.mark.anyio
QUERIES = [
    QUESTION,
    "who fixed the heating?",
    "how do I keep bread dough rising",
    "meeting plans for the team",
]
KAYAK = """# Kayak hull patch

The crack near the stern let water in every trip. I sanded it, laid two layers of fibreglass
cloth in epoxy, and after a day of curing the boat stayed dry on the lake.
"""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def embedded_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return await vault(tmp_path_factory.mktemp("ann"), embed=True)


@pytest.fixture
def data_dir(embedded_vault: Path, tmp_path: Path) -> Path:
    """A copy of the embedded vault's data for this test alone."""
    return Path(shutil.copytree(embedded_vault, tmp_path / "data"))


@pytest.fixture
def approximate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ann.ENV, "1")


@pytest.fixture
async def ann_db(data_dir: Path, approximate: None) -> AsyncIterator[Database]:
    db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
    assert isinstance(await dense_indexes(db, notes).ready(), AnnIndex)
    yield db
    await db.close()


async def search(db: Database, query: str, mode: SearchMode) -> Any:
    return await notes.search(SqliteStore(db, "notes"), SearchRequest(query, mode=mode, limit=5), Defaults())


def uris(response: Any) -> list[str]:
    return [r.uri for r in response.results]


async def test_the_approximate_index_ranks_as_the_exact_one_does(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exact_db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
    try:
        assert isinstance(await dense_indexes(exact_db, notes).ready(), DenseIndex)
        exact = {(q, m): await search(exact_db, q, m) for q in QUERIES for m in ("semantic", "hybrid")}
    finally:
        await exact_db.close()
    monkeypatch.setenv(ann.ENV, "1")
    db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
    try:
        assert isinstance(await dense_indexes(db, notes).ready(), AnnIndex)
        for (query, mode), want in exact.items():
            got = await search(db, query, mode)
            assert uris(got) == uris(want), (query, mode)
            assert not got.degraded and got.results[0].score_type == want.results[0].score_type
            assert [r.score for r in got.results] == pytest.approx([r.score for r in want.results], abs=0.01)
    finally:
        await db.close()
    assert index_path(db.path).is_file() and index_path(db.path).parent == db.path.parent


async def test_a_search_before_the_first_build_ends_is_lexical_and_says_so(
    data_dir: Path, approximate: None
) -> None:
    db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
    try:
        first = await search(db, QUESTION, "hybrid")
        assert first.degraded and "approximate dense index" in (first.provider_hint or "")
        await dense_indexes(db, notes).ready()
        after = await search(db, QUESTION, "hybrid")
        assert not after.degraded and "July reading" in [r.title for r in after.results]
    finally:
        await db.close()


@pytest.mark.parametrize("damage", ["deleted", "corrupt", "truncated"])
async def test_a_missing_or_damaged_index_file_is_rebuilt_from_the_database(
    data_dir: Path, approximate: None, damage: str
) -> None:
    path = database_path(data_dir, "local", "notes")
    db = await open_database(path, notes.migrations)
    built = await dense_indexes(db, notes).ready()
    assert isinstance(built, AnnIndex)
    before = uris(await search(db, QUESTION, "semantic"))
    size = len(built.index)
    await db.close()
    saved = index_path(path)
    if damage == "deleted":
        saved.unlink()
    elif damage == "corrupt":
        saved.write_bytes(b"not an index" * 100)
    else:
        saved.write_bytes(saved.read_bytes()[: saved.stat().st_size // 2])
    db = await open_database(path, notes.migrations)
    try:
        rebuilt = await dense_indexes(db, notes).ready()
        assert isinstance(rebuilt, AnnIndex) and len(rebuilt.index) == size
        assert uris(await search(db, QUESTION, "semantic")) == before
    finally:
        await db.close()
    assert len(ann.load(saved, 384)) == size  # the file is whole again


async def test_vectors_added_after_the_index_was_built_are_found(ann_db: Database, data_dir: Path) -> None:
    indexes = dense_indexes(ann_db, notes)
    built = await indexes.ready()
    assert isinstance(built, AnnIndex)
    held = len(built.index)
    folder = data_dir.parent / "more"
    folder.mkdir()
    (folder / "Kayak hull patch.md").write_text(KAYAK, encoding="utf-8")
    await import_into(data_dir, "notes", folder)
    worker = await open_database(ann_db.path, notes.migrations)  # as the background worker does
    try:
        model = embedders.embedder()
        assert model is not None
        await embed_missing(SqliteVectorStore(worker, SOURCES["notes"]), model)
    finally:
        await worker.close()
    await search(ann_db, "how did I repair my boat?", "semantic")  # notices the new vectors
    synced = await indexes.ready()
    assert isinstance(synced, AnnIndex)
    assert synced is not built and len(built.index) == held  # searches used it meanwhile
    assert len(synced.index) == held + len(synced.layout.keys()) - len(built.layout.keys())
    found = await search(ann_db, "how did I repair my boat?", "semantic")
    assert found.results[0].title == "Kayak hull patch"


async def test_each_user_searches_an_index_of_their_own_notes(
    tmp_path: Path, data_dir: Path, approximate: None
) -> None:
    ada = database_path(data_dir, "local", "notes")
    db = await open_database(ada, notes.migrations)
    try:
        assert isinstance(await dense_indexes(db, notes).ready(), AnnIndex)
    finally:
        await db.close()
    ada_file = index_path(ada).read_bytes()
    folder = tmp_path / "bob-notes"
    shutil.copytree(NOTES, folder)
    await import_into(data_dir, "notes", folder, user="bob")
    bob = database_path(data_dir, "bob", "notes")
    shutil.copy(index_path(ada), index_path(bob))  # another user's index where bob's would be
    db = await open_database(bob, notes.migrations)
    try:
        model = embedders.embedder()
        assert model is not None
        await embed_missing(SqliteVectorStore(db, SOURCES["notes"]), model)
        own = await dense_indexes(db, notes).ready()
        assert isinstance(own, AnnIndex)
        held = np.sort(np.asarray(own.index.keys[:], dtype=np.uint64))
        assert np.array_equal(held, np.sort(own.layout.keys()))
        # a query near one note (a vague one may fall under the floor of a three-note vault)
        titles = {r.title for r in (await search(db, "when was the boiler serviced", "semantic")).results}
        bobs = {row[0] for row in await db.fetchall("SELECT title FROM notes_items")}
        assert len(bobs) == len(list(NOTES.glob("*.md"))) and titles == bobs
    finally:
        await db.close()
    assert index_path(ada).read_bytes() == ada_file


@pytest.mark.parametrize(
    ("texts", "windows", "keys"),
    [
        ([], [], []),
        ([1], [1], [256]),
        ([1, 2], [3, 1], [256, 257, 258, 512]),
        ([5], [300], [5 * 256 + n for n in range(255)]),  # at most 255 windows of a text
    ],
)
def test_each_window_of_a_text_has_its_own_key(texts: list[int], windows: list[int], keys: list[int]) -> None:
    got = ann.window_keys(np.array(texts, dtype=np.int64), np.array(windows, dtype=np.int64))
    assert got.dtype == np.uint64 and got.tolist() == keys


def test_a_text_shared_by_two_chunks_is_indexed_once() -> None:
    h1, h2 = "0" * 13 + "1" + "f" * 18, "0" * 13 + "2" + "f" * 18
    layout = ann.Layout.of([(10, 1, h1, 2), (11, 2, h1, 2), (12, 2, h2, 1)], stamp=())
    assert layout.keys().tolist() == [256, 257, 512]
    assert layout.items[layout.by_item].tolist() == [1, 2, 2]


async def test_the_bench_compares_the_index_with_exact_on_real_vectors(data_dir: Path) -> None:
    from knowledge_mcp.bench.dense.ann import real

    report = real(database_path(data_dir, "local", "notes"), QUERIES, "f16")
    assert report["queries"] == len(QUERIES) and report["windows"] > 0
    assert report["items_10"]["recall@10"] >= 0.9 and report["items_99"]["recall@10"] >= 0.9
    assert not index_path(database_path(data_dir, "local", "notes")).exists()  # a copy was indexed
