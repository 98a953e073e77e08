"""Semantic and hybrid search on the PostgreSQL item store answer as on the SQLite files: the same
files imported into both, embedded by the real offline model into each, the same queries
through real MCP clients of two servers."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.registry import SOURCES, get_source
from knowledge_mcp.sources.search.dense.embedder import embedder
from knowledge_mcp.sources.search.dense.indexing import embed_missing
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.postgres.embeddings.store import PgVectorStore
from knowledge_mcp.sources.storage.postgres.pool import open_pg

from ...conftest import FIXTURES, ROOT, call, score_types
from .conftest import Importing

pytestmark = pytest.mark.anyio
DENSE_NOTES = ROOT / "tests" / "sources" / "search" / "dense" / "notes"
SCORE_TOLERANCE = 1e-4
"""Cosines in float32 (numpy on SQLite, pgvector on PostgreSQL) differ in the last bits."""

QUERIES = {
    "notes": ["how do I bake bread at home", "keeping plants alive in summer", "backing up my server"],
    "media": ["paying a bill", "renewable energy on the roof", "a talk about food history"],
    "chats": ["fixing a programming bug", "writing a story together", "who is mirelle"],
    "prompts": ["check my code for mistakes", "make a text shorter", "database query help"],
    "characters": ["someone who commands a ship", "a person who works with books", "a friendly guide"],
}


def ranked(page: dict[str, Any]) -> list[tuple[str, str]]:
    return list(zip([h["uri"] for h in page["results"]], score_types(page), strict=True))


def assert_same(lite: dict[str, Any], pg: dict[str, Any], what: str) -> None:
    assert ranked(pg) == ranked(lite), what
    for a, b in zip(lite["results"], pg["results"], strict=True):
        assert b["score"] == pytest.approx(a["score"], abs=SCORE_TOLERANCE), what
    assert pg.get("degraded") == lite.get("degraded"), what


def folders(tmp: Path, source: str) -> list[Path]:
    """A source's fixtures (the notes without their one very large file, slow to embed twice)."""
    if source != "notes":
        return [FIXTURES / source]
    shutil.copytree(FIXTURES / "notes", tmp / "vault", ignore=shutil.ignore_patterns("huge-field-guide.md"))
    return [tmp / "vault"]


async def embed_both(data_dir: Path, pg_url: str, source: str, user: str = "local") -> None:
    model = embedder()
    assert model is not None, "the bundled model is installed"
    db = await open_database(database_path(data_dir, user, source), get_source(source).migrations)
    try:
        await embed_missing(SqliteVectorStore(db, SOURCES[source]), model)
    finally:
        await db.close()
    pg = await open_pg(pg_url)
    try:
        report = await embed_missing(PgVectorStore(pg, user, source), model)
        assert report.linked == report.chunks > 0
    finally:
        await pg.close()


@pytest.mark.parametrize("source", list(QUERIES))
async def test_semantic_and_hybrid_searches_on_postgresql_give_the_sqlite_answers(
    pg_servers: Any, import_both: Importing, data_dir: Path, pg_url: str, source: str, tmp_path: Path
) -> None:
    await import_both(source, *folders(tmp_path, source))
    await embed_both(data_dir, pg_url, source)
    off = {"embed_in_background": False}
    answered = {"semantic": 0, "hybrid": 0}
    async with pg_servers("sqlite", **off) as lite, pg_servers("postgresql", **off) as pg:
        for query in QUERIES[source]:
            for mode in answered:
                args = {"query": query, "mode": mode, "limit": 8}
                page = await call(pg, f"{source}_search", **args)
                assert_same(await call(lite, f"{source}_search", **args), page, f"{mode}: {query}")
                assert "degraded" not in page, page.get("provider_hint")
                assert set(score_types(page)) <= {"dense" if mode == "semantic" else "hybrid"}
                answered[mode] += bool(page["results"])
    assert min(answered.values()) >= 1, answered  # not only searches that find nothing


async def test_knowledge_search_in_hybrid_mode_ranks_five_sources_from_postgresql_as_from_sqlite(
    pg_servers: Any, import_both: Importing, data_dir: Path, pg_url: str, tmp_path: Path
) -> None:
    for source in QUERIES:
        await import_both(source, *folders(tmp_path, source))
        await embed_both(data_dir, pg_url, source)
    off = {"embed_in_background": False}
    async with pg_servers("sqlite", **off) as lite, pg_servers("postgresql", **off) as pg:
        spanned: set[str] = set()
        for query in ["a captain and his ship", "fixing errors in python code", "bread and cooking"]:
            args = {"query": query, "mode": "hybrid", "limit": 10}
            page = await call(pg, "knowledge_search", **args)
            assert_same(await call(lite, "knowledge_search", **args), page, query)
            spanned |= {h["uri"].split("://")[0] for h in page["results"]}
    assert len(spanned) >= 3  # the merge really spans sources


async def test_without_vectors_a_semantic_search_on_postgresql_is_lexical_and_says_why(
    pg_servers: Any, import_both: Importing
) -> None:
    await import_both("notes")
    async with pg_servers("postgresql", embed_in_background=False) as pg:
        page = await call(pg, "notes_search", query="sourdough bread", mode="semantic")
    assert page["results"], "answered lexically"
    assert page["degraded"] is True
    assert "0 % built" in page["provider_hint"]


async def test_alices_semantic_search_never_returns_bobs_chunks(
    pg_servers: Any, import_both: Importing, data_dir: Path, pg_url: str, tmp_path: Path
) -> None:
    await import_both("notes", *folders(tmp_path, "notes"), user="alice")
    await import_both("notes", DENSE_NOTES, user="bob")
    for user in ("alice", "bob"):
        await embed_both(data_dir, pg_url, "notes", user)
    question = {"query": "which novels did I enjoy last summer?", "mode": "semantic", "limit": 20}
    async with pg_servers("postgresql", user="bob", embed_in_background=False) as bob:
        page = await call(bob, "notes_search", **question)
        bobs = {h["uri"] for h in page["results"]}
        assert "July reading" in [h["title"] for h in page["results"]]
    async with pg_servers("postgresql", user="alice", embed_in_background=False) as alice:
        for query in [question["query"], "who fixed the heating?", "a team offsite", "bread"]:
            page = await call(alice, "notes_search", **{**question, "query": query})
            assert "degraded" not in page
            assert {h["uri"] for h in page["results"]}.isdisjoint(bobs), query
            assert "July reading" not in [h["title"] for h in page["results"]]
