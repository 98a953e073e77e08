"""Each source's search and get tests (tests/sources/test_<source>_tools.py), on the PostgreSQL item store.

The same test functions, collected here a second time (as `test_<source>__<name>`) with this
module's client fixtures: a server reading the repo's fixtures from PostgreSQL (`pg_fixtures`,
imported once per run). A test joins automatically when it is added to its module; the ones
left out are in LEFT_OUT with the reason, and test_pg_refusals.py asserts what PostgreSQL
answers instead where it refuses by design.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from tests.conftest import PgFixtures, store_settings
from tests.sources import (
    test_characters_tools,
    test_chats_tools,
    test_media_tools,
    test_notes_tools,
    test_prompts_tools,
)

pytestmark = pytest.mark.anyio

MODULES: dict[str, ModuleType] = {
    "notes": test_notes_tools,
    "media": test_media_tools,
    "chats": test_chats_tools,
    "characters": test_characters_tools,
    "prompts": test_prompts_tools,
}

FILTER = "a filter or field-limited search: refused on PostgreSQL for now (test_pg_contract_refusals.py)"
TRANSCRIPT = "finds the transcript with a media_types filter (refused); test_pg_contract_refusals.py reads it"
LEFT_OUT: dict[str, str] = {
    "notes:test_keywords_filter_keeps_only_tagged_notes": FILTER,
    "media:test_media_types_filter_keeps_only_those_kinds": FILTER,
    "media:test_date_filters_compare_the_items_own_date": FILTER,
    "media:test_transcript_text_has_a_timestamp_before_each_cue": TRANSCRIPT,
    "media:test_transcript_as_subtitle_files_regenerates_the_cues": TRANSCRIPT,
    "media:test_transcript_as_json_is_a_list_of_timed_cues": TRANSCRIPT,
    "chats:test_by_restricts_matching_to_titles_or_messages": FILTER,
    "chats:test_by_message_anchors_on_a_message_that_contains_the_words": FILTER,
    "chats:test_sender_filter_keeps_only_that_speakers_messages": FILTER,
    "chats:test_chat_hits_link_to_the_character_card_and_filter_by_it": FILTER,
    "chats:test_fts_syntax_in_user_text_never_errors": FILTER + " (`by` in every case)",
    "prompts:test_fields_restrict_where_a_prompt_may_match": FILTER,
    "prompts:test_fields_filter_names_the_matching_field_and_counts_only_those": FILTER,
    "prompts:test_pages_never_overlap_or_skip_with_a_fields_filter": FILTER,
    "prompts:test_fts_syntax_in_user_text_never_errors": FILTER + " (`fields` in half the cases)",
    "prompts:test_snippet_length_is_clamped_with_a_warning": FILTER + " (`fields`)",
}
"""Tests of those modules that do not run here, and why. Besides, a test that builds its own
world (asks for `data_dir` or `client_factory`: it imports into SQLite) runs in
test_pg_contract_imports.py instead."""
OWN_WORLD = {"data_dir", "client_factory", "tmp_path"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def server(pg_fixtures: PgFixtures) -> AsyncIterator[Any]:
    settings = store_settings("postgresql", pg_fixtures.url)
    mcp, host = build_server(Settings(data_dir=pg_fixtures.data_dir, **settings))
    try:
        yield mcp
    finally:
        await host.close()


@pytest.fixture
async def pg_client(server: Any) -> AsyncIterator[Any]:
    async with Client(server) as client:
        yield client


@pytest.fixture
def notes_client(pg_client: Any) -> Any:
    return pg_client


@pytest.fixture
def media_client(pg_client: Any) -> Any:
    return pg_client


@pytest.fixture
def chats_client(pg_client: Any) -> Any:
    return pg_client


@pytest.fixture
def cards_client(pg_client: Any) -> Any:
    return pg_client


@pytest.fixture
def prompts_client(pg_client: Any) -> Any:
    return pg_client


def reads_the_served_fixtures(function: Any) -> bool:
    return not OWN_WORLD & set(inspect.signature(function).parameters)


def collected() -> dict[str, Any]:
    """`test_<source>__<name>` for every test of the source modules reading the served fixtures,
    but LEFT_OUT's."""
    tests = {}
    for source, module in MODULES.items():
        for name, function in vars(module).items():
            wanted = name.startswith("test_") and f"{source}:{name}" not in LEFT_OUT
            if wanted and reads_the_served_fixtures(function):
                tests[f"test_{source}__{name.removeprefix('test_')}"] = function
    return tests


def test_every_left_out_test_still_exists_and_most_tests_run_here() -> None:
    for key in LEFT_OUT:
        source, name = key.split(":")
        assert hasattr(MODULES[source], name), f"{key} was renamed or removed: update LEFT_OUT"
    everything = [n for m in MODULES.values() for n in vars(m) if n.startswith("test_")]
    assert len(collected()) >= 0.7 * len(everything), (len(collected()), len(everything))


globals().update(collected())
