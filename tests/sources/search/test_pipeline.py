"""The search pipeline's stages are seams: a stage put in the pipeline's lists runs in its place
and in order, and the default no-op stages change nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.notes.source import NotesSource
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.lexical.retriever import LexicalRetriever
from knowledge_mcp.sources.search.pipeline import DEFAULT_PIPELINE, SearchPipeline
from knowledge_mcp.sources.search.query import ParsedQuery, Term
from knowledge_mcp.sources.search.request import NOTHING, Found, SearchContext, SearchRequest
from knowledge_mcp.sources.storage.db import Database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio


def searching_with(pipeline: SearchPipeline) -> NotesSource:
    """The notes source with another pipeline (a subclass: the registered one is untouched)."""

    class Notes(NotesSource):
        pass

    Notes.pipeline = pipeline
    return Notes()


def titles(response: Any) -> list[str]:
    return [r.title for r in response.results]


async def test_an_expander_adds_terms_the_retriever_then_finds(notes_db: Database) -> None:
    class Glossary:
        async def expand(self, ctx: SearchContext, query: ParsedQuery) -> ParsedQuery:
            if any(t.words == ("bread",) for t in query.terms):
                return ParsedQuery((*query.terms, Term(("sourdough",))))
            return query

    expanded = searching_with(replace(DEFAULT_PIPELINE, expanders=(Glossary(),)))
    found = await expanded.search(
        SqliteStore(notes_db, "notes"), SearchRequest("bread", limit=20), Defaults()
    )
    unexpanded = await notes.search(
        SqliteStore(notes_db, "notes"), SearchRequest("bread", limit=20), Defaults()
    )
    assert "sourdough" in {t for r in found.results for t in r.matched_terms}
    assert set(titles(unexpanded)) <= set(titles(found))


async def test_a_reranker_reorders_the_page_and_ranks_follow_the_new_order(notes_db: Database) -> None:
    class Reverse:
        def pool(self, ctx: SearchContext) -> int | None:
            return None  # the page is enough

        async def rerank(self, ctx: SearchContext, query: ParsedQuery, found: Found) -> Found:
            return replace(found, rows=list(reversed(found.rows[: ctx.request.limit])))

    request = SearchRequest("sourdough bread flour", limit=4)
    before = await notes.search(SqliteStore(notes_db, "notes"), request, Defaults())
    after = await searching_with(replace(DEFAULT_PIPELINE, rerankers=(Reverse(),))).search(
        SqliteStore(notes_db, "notes"), request, Defaults()
    )
    assert len(before.results) == 4
    assert titles(after) == list(reversed(titles(before)))
    assert [r.rank for r in after.results] == [1, 2, 3, 4]


async def test_the_fuser_gets_every_answering_retrievers_list_and_a_passing_one_is_left_out(
    notes_db: Database,
) -> None:
    seen: list[int] = []

    class Passes:
        async def retrieve(self, ctx: SearchContext, query: ParsedQuery) -> Found | None:
            return None

    class LastList:
        async def fuse(self, ctx: SearchContext, query: ParsedQuery, found: Sequence[Found]) -> Found:
            seen.append(len(found))
            return found[-1]

    pipeline = replace(
        DEFAULT_PIPELINE, retrievers=(Passes(), LexicalRetriever(), Passes()), fuser=LastList()
    )
    response = await searching_with(pipeline).search(
        SqliteStore(notes_db, "notes"), SearchRequest("sourdough"), Defaults()
    )
    assert seen == [1] and response.results


async def test_a_diversifier_that_drops_every_row_leaves_an_empty_page(notes_db: Database) -> None:
    class Nothing:
        async def diversify(self, ctx: SearchContext, found: Found) -> Found:
            ctx.warnings.append("diversified")
            return NOTHING

    pipeline = replace(DEFAULT_PIPELINE, diversifier=Nothing())
    response = await searching_with(pipeline).search(
        SqliteStore(notes_db, "notes"), SearchRequest("sourdough"), Defaults()
    )
    assert response.results == [] and response.total_estimated == 0
    assert "diversified" in response.warnings
