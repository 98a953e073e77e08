"""What the PostgreSQL item store answers where it does not do something yet, said in one
sentence, and the transcript tests the filter kept out of test_pg_contract_tools.py.

Each refusal here is the PostgreSQL variant of a contract test left out there: when the store
learns the filter, the refusal test fails and the left-out test should join the PostgreSQL run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.media.formats.transcripts import parse_cues
from tests.conftest import PgFixtures, call, error, store_settings

pytestmark = pytest.mark.anyio

FIELDS = "filters: searching only some fields is not supported on the PostgreSQL item store yet"


def named(*filters: str) -> str:
    return f"filters: {', '.join(filters)}: not supported on the PostgreSQL item store yet; search without it"


REFUSALS = [
    ("notes_search", {"query": "recipe", "keywords": ["cooking"]}, named("keywords")),
    ("media_search", {"query": "the", "media_types": ["transcript"]}, named("media_types")),
    ("media_search", {"query": "the", "media_types": ["pdf"], "date_from": "2020-01-01"}, None),
    ("chats_search", {"query": "feedback", "by": "title"}, FIELDS),
    ("chats_search", {"query": "feedback", "by": "message"}, FIELDS),
    ("chats_search", {"query": "python", "sender": "user"}, named("sender")),
    ("prompts_search", {"query": "diff", "fields": ["name"]}, FIELDS),
    ("knowledge_search", {"query": "recipe", "filters": {"notes": {"keywords": ["cooking"]}}}, None),
]
"""(tool, arguments, the whole error text; None: checked by its parts, as the order may vary)."""


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
async def pg(server: Any) -> AsyncIterator[Any]:
    async with Client(server) as client:
        yield client


@pytest.mark.parametrize(("tool", "arguments", "expected"), REFUSALS)
async def test_a_filter_or_field_limit_on_postgresql_is_refused_in_one_sentence(
    pg: Any, tool: str, arguments: dict[str, Any], expected: str | None
) -> None:
    message = await error(pg, tool, **arguments)
    text = message.removeprefix(f"Error executing tool {tool}: ")
    if expected is not None:
        assert text == expected
    else:
        assert text.startswith("filters: ") and "not supported on the PostgreSQL item store yet" in text
    assert "\n" not in text.strip()


async def test_the_character_filter_of_chats_on_postgresql_is_refused_in_one_sentence(pg: Any) -> None:
    card = (await call(pg, "characters_search", query="captain"))["results"][0]["uri"]
    message = await error(pg, "chats_search", query="captain", character_id=card.split("://", 1)[1])
    assert message.removeprefix("Error executing tool chats_search: ") == named("character_id")


@pytest.mark.parametrize("source", ["notes", "media", "chats", "characters", "prompts"])
@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
async def test_semantic_and_hybrid_on_postgresql_answer_lexically_and_say_so(
    pg: Any, source: str, mode: str
) -> None:
    lexical = await call(pg, f"{source}_search", query="the", mode="lexical")
    page = await call(pg, f"{source}_search", query="the", mode=mode)
    assert [h["uri"] for h in page["results"]] == [h["uri"] for h in lexical["results"]]
    assert page["results"] and page["degraded"] is True
    hint = "semantic search does not run on the PostgreSQL item store yet; results are lexical"
    assert hint in page["provider_hint"]


async def test_more_than_one_passage_per_item_on_postgresql_gives_one_with_a_warning(pg: Any) -> None:
    page = await call(pg, "knowledge_search", query="the", per_item=3)
    assert page["results"]
    assert "per_item: the PostgreSQL item store gives one passage per item so far" in page["warnings"]
    for hit in page["results"]:
        assert len(hit.get("passages") or [hit]) == 1


async def transcript_id(pg: Any) -> str:
    """What test_media_tools' helper finds with the media_types filter: the best transcript hit."""
    page = await call(pg, "media_search", query="harbour master", limit=20)
    return next(str(h["uri"]) for h in page["results"] if h["media_type"] == "transcript")


async def test_a_transcript_in_postgresql_reads_as_text_subtitles_and_json(pg: Any) -> None:
    media_id = await transcript_id(pg)
    text = await call(pg, "media_transcript", media_id=media_id)
    lines = text["content"].split("\n")
    assert lines[0].startswith("[00:00:04] Welcome back to Tidewater") and len(lines) == 25
    srt = await call(pg, "media_transcript", media_id=media_id, format="srt")
    assert srt["content"].startswith("1\n00:00:04,000 --> 00:00:11,500\n")
    vtt = await call(pg, "media_transcript", media_id=media_id, format="vtt")
    cues, _ = parse_cues(vtt["content"])
    assert len(cues) == 25 and cues[-1]["end_s"] == 362.428
    cues_json = (await call(pg, "media_transcript", media_id=media_id, format="json"))["content"]
    assert cues_json[3]["speaker"] == "Ewan" and len(cues_json) == 25


async def test_writing_a_note_into_the_postgresql_store_is_refused_in_one_sentence(pg: Any) -> None:
    listed = {t.name for t in (await pg.list_tools()).tools}
    assert {"notes_create", "notes_update"} <= listed  # offered to a local caller, then refused
    message = await error(pg, "notes_create", title="Plan", content="Water the tomatoes.")
    refusal = "notes cannot be written into the PostgreSQL item store yet (item_store = postgresql)"
    assert refusal in message
