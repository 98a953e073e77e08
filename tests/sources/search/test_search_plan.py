"""The search planner: which terms find candidates and which only score them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.lexical import memory_index
from knowledge_mcp.sources.search.lexical import plan as search_plan
from knowledge_mcp.sources.search.lexical.plan import (
    CANDIDATE_CAP,
    EXACT_CAP,
    FLAT_PER_RESULT,
    SAMPLE_CAP,
    SCORE_CAP,
    estimated_df,
    idf,
    plan_search,
)
from knowledge_mcp.sources.search.lexical.term_stats import term_stats
from knowledge_mcp.sources.search.query import Term, parse_query
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from tests.conftest import FIXTURES, import_into


def sample_every_term(monkeypatch: pytest.MonkeyPatch, refill: int = 0) -> None:
    """Caps so small that any term matching more than one row is sampled."""
    for name, value in (("PER_RESULT", 0), ("EXACT_CAP", 0), ("CANDIDATE_CAP", 1), ("REFILL_CAP", refill)):
        monkeypatch.setattr(search_plan, name, value)


def terms(*words: str) -> tuple[Term, ...]:
    return tuple(Term((w,)) for w in words)


def df(**counts: int) -> dict[str, int]:
    return {f'"{w}"': n for w, n in counts.items()}


def test_no_term_matching_anything_plans_nothing() -> None:
    assert plan_search(terms("zyx", "qqq"), df(zyx=0, qqq=0), 1000) is None


def test_few_matching_rows_are_all_scored_exactly() -> None:
    plan = plan_search(terms("rare", "medium"), df(rare=5, medium=EXACT_CAP - 5), 100_000)
    assert plan is not None
    assert plan.exact and plan.candidates is None and plan.cap is None
    assert plan.match == '"rare" OR "medium"'


def test_rows_of_common_terms_are_scored_only_when_a_rare_term_matches() -> None:
    plan = plan_search(terms("common", "rare"), df(common=50_00, rare=40), 100_000)
    assert plan is not None and not plan.exact
    assert plan.candidates == '"rare"'
    assert plan.match == '"rare" OR "common"'  # the candidates get their full score
    assert plan.cap is None


def test_candidates_take_the_rarest_terms_up_to_the_cap() -> None:
    counts = df(a=10, b=CANDIDATE_CAP - 20, c=CANDIDATE_CAP, d=3_000)
    plan = plan_search(terms("d", "c", "b", "a"), counts, 1_000_000)
    assert plan is not None
    assert plan.candidates == '"a" OR "b"'


def test_terms_in_most_rows_are_dropped_as_their_idf_is_zero() -> None:
    plan = plan_search(terms("everywhere", "rare"), df(everywhere=900, rare=3), 1000)
    assert plan is not None
    assert plan.match == '"rare"'
    assert plan.dropped == ("everywhere",)


def test_a_query_of_only_ubiquitous_terms_still_searches_them() -> None:
    plan = plan_search(terms("everywhere"), df(everywhere=900), 1000)
    assert plan is not None and plan.match == '"everywhere"'


def test_a_single_very_common_term_scores_a_sample_of_its_newest_rows() -> None:
    plan = plan_search(terms("common"), df(common=90_000), 320_000)
    assert plan is not None and not plan.exact
    assert plan.cap == SAMPLE_CAP
    assert plan.candidates is None  # the sample is taken from the scored expression itself
    assert plan.estimated_rows == 90_000


def test_terms_too_common_to_score_cheaply_are_left_out_when_rarer_ones_are_asked() -> None:
    plan = plan_search(terms("huge", "rare"), df(huge=SCORE_CAP + 1, rare=7), 1_000_000)
    assert plan is not None
    assert plan.match == '"rare"' and plan.unscored == ("huge",)
    assert plan.refill is None  # too many rows to rerun exactly


def test_a_cheap_exact_query_is_kept_for_refilling_a_short_page() -> None:
    plan = plan_search(terms("common", "rare"), df(common=5_000, rare=3), 100_000)
    assert plan is not None
    assert plan.refill == '"rare" OR "common"'


@pytest.mark.parametrize(
    ("query", "counts", "expected"),
    [
        ('"solar energy"', {'"solar"': 50, '"energy"': 900}, 50),
        ('"solar energy"', {'"solar"': 0, '"energy"': 900}, 0),
        ("solar", {'"solar"': 50}, 50),
        ("sol*", {'"sol" *': 70}, 70),
    ],
)
def test_a_phrase_is_estimated_by_its_rarest_word(query: str, counts: dict[str, int], expected: int) -> None:
    parsed = parse_query(query)
    assert estimated_df(parsed.terms, counts) == {parsed.terms[0].fts(): expected}


# -- on a real index: pruning changes which rows are scored, never how -------------------------


@pytest.fixture
async def notes_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Database]:
    # The plan is FTS5's: keep the small fixture source from being ranked by its memory copy.
    monkeypatch.setattr(memory_index, "MAX_CHUNKS", -1)
    await import_into(tmp_path, "notes", FIXTURES / "notes")
    db = await open_database(database_path(tmp_path, "local", "notes"), notes.migrations)
    yield db
    await db.close()


@pytest.mark.anyio
async def test_pruned_search_scores_its_candidates_exactly_as_the_full_search(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = "sourdough bread recipe"
    exact = await notes.search(SqliteStore(notes_db, "notes"), SearchRequest(query, limit=50), Defaults())
    stats = await term_stats(notes_db, notes.name).lookup(
        notes_db, [t.fts() for t in parse_query(query).terms]
    )
    rarest = min(stats.df.values())
    monkeypatch.setattr(search_plan, "PER_RESULT", 0)
    monkeypatch.setattr(search_plan, "EXACT_CAP", 0)
    monkeypatch.setattr(search_plan, "CANDIDATE_CAP", rarest)
    monkeypatch.setattr(search_plan, "REFILL_CAP", 0)
    pruned = await notes.search(SqliteStore(notes_db, "notes"), SearchRequest(query, limit=50), Defaults())
    assert 0 < pruned.count < exact.count  # only the rarest term's items were candidates
    full = {r.id: r.score for r in exact.results}
    assert all(r.score == full[r.id] for r in pruned.results)
    kept = {r.id for r in pruned.results}
    assert [r.id for r in pruned.results] == [r.id for r in exact.results if r.id in kept]


@pytest.mark.anyio
async def test_a_short_candidate_page_is_refilled_by_the_exact_search(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = "sourdough bread recipe"
    exact = await notes.search(SqliteStore(notes_db, "notes"), SearchRequest(query, limit=50), Defaults())
    monkeypatch.setattr(search_plan, "PER_RESULT", 0)
    monkeypatch.setattr(search_plan, "EXACT_CAP", 0)
    monkeypatch.setattr(search_plan, "CANDIDATE_CAP", 1)
    refilled = await notes.search(SqliteStore(notes_db, "notes"), SearchRequest(query, limit=50), Defaults())
    assert [r.id for r in refilled.results] == [r.id for r in exact.results]


def test_an_unranked_sample_stops_at_enough_items_for_the_page() -> None:
    shallow = plan_search(terms("common"), df(common=90_000), 320_000, depth=10)
    deep = plan_search(terms("common"), df(common=90_000), 320_000, depth=30)
    ranked = plan_search(terms("common", "other"), df(common=9_000, other=10_000), 320_000)
    assert shallow is not None and deep is not None and ranked is not None
    assert shallow.sample_items == FLAT_PER_RESULT * 10 and deep.sample_items == FLAT_PER_RESULT * 30
    assert ranked.sample_items is None  # a ranked sample reads its whole cap


def test_a_sample_of_one_very_common_term_is_not_ranked_by_bm25() -> None:
    plan = plan_search(terms("common"), df(common=90_000), 320_000)
    assert plan is not None
    assert plan.flat_score == pytest.approx(-idf(90_000, 320_000))
    mixed = plan_search(terms("common", "other"), df(common=9_000, other=10_000), 320_000)
    assert mixed is not None and mixed.cap == SAMPLE_CAP and mixed.flat_score is None


@pytest.mark.anyio
async def test_a_sampled_search_answers_the_newest_matching_items_first(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample_every_term(monkeypatch)
    monkeypatch.setattr(search_plan, "SAMPLE_CAP", 6)  # fewer rows than "the" is in
    out = await notes.search(SqliteStore(notes_db, "notes"), SearchRequest("the", limit=50), Defaults())
    assert out.count > 2
    assert len({r.score for r in out.results}) == 1
    modified = [r.last_modified for r in out.results]
    assert modified == sorted(modified, reverse=True)
    assert any("6 most recently indexed (newest first)" in w for w in out.warnings)


@pytest.mark.anyio
async def test_a_sample_that_read_every_matching_row_is_the_whole_answer(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample_every_term(monkeypatch, refill=1_000_000)  # a refill would be allowed
    sql = (
        "SELECT DISTINCT c.item_rowid FROM notes_chunks_fts JOIN notes_chunks AS c "
        "ON c.id = notes_chunks_fts.rowid WHERE notes_chunks_fts MATCH ?"
    )
    every = await notes_db.fetchall(sql, ('"the"',))
    out = await notes.search(SqliteStore(notes_db, "notes"), SearchRequest("the", limit=50), Defaults())
    assert 2 < len(every) <= 50
    assert out.count == out.total_estimated == len(every)  # every match, counted exactly
    assert not out.has_more
    modified = [r.last_modified for r in out.results]
    assert modified == sorted(modified, reverse=True)  # newest first, not re-ranked by bm25
    assert not any("most recently indexed" in w for w in out.warnings)


def test_deeper_pages_get_more_candidates() -> None:
    counts = df(a=200, b=CANDIDATE_CAP, c=5_000)
    shallow = plan_search(terms("a", "b", "c"), counts, 1_000_000, depth=10)
    deep = plan_search(terms("a", "b", "c"), counts, 1_000_000, depth=100)
    assert shallow is not None and deep is not None
    assert shallow.candidates == '"a"'
    assert deep.candidates == '"a" OR "b"'  # 10 rows per result: up to 1,000 candidate rows


@pytest.mark.anyio
async def test_an_unranked_sample_reads_the_newest_rows_only_until_it_has_its_items(
    notes_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample_every_term(monkeypatch)
    monkeypatch.setattr(search_plan, "FLAT_PER_RESULT", 1)  # a page of 2 wants 2 items
    sql = (
        "SELECT c.item_rowid FROM notes_chunks_fts JOIN notes_chunks AS c ON c.id = notes_chunks_fts.rowid "
        "WHERE notes_chunks_fts MATCH ? ORDER BY notes_chunks_fts.rowid DESC"
    )
    newest = [row[0] for row in await notes_db.fetchall(sql, ('"the"',))]
    assert len(set(newest)) > 2
    out = await notes.search(SqliteStore(notes_db, "notes"), SearchRequest("the", limit=2), Defaults())
    first_two = list(dict.fromkeys(newest))[:2]
    ids = {row[0]: row[1] for row in await notes_db.fetchall("SELECT id, item_id FROM notes_items")}
    assert {r.id for r in out.results} == {ids[rowid] for rowid in first_two}
    # Read in batches from as many rows as items wanted, then four times more: not the whole cap.
    read = len(newest[: newest.index(first_two[1]) + 1])
    expected = 2 if read <= 2 else 2 + 8
    assert any(f"searched the {min(expected, len(newest))} most recently indexed" in w for w in out.warnings)
