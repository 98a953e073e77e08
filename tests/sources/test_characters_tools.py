"""characters_search / characters_get through a real in-memory MCP client over the fixture cards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.budgets import needed_budget, within_budget
from tests.conftest import FIXTURES, call, import_into, item_id

pytestmark = pytest.mark.anyio

CARDS = FIXTURES / "characters"


@pytest.fixture
async def cards_client(data_dir: Path, client_factory: Any) -> Any:
    await import_into(data_dir, "characters", CARDS)
    async with client_factory() as client:
        yield client


async def top(client: Any, query: str) -> dict[str, Any]:
    response = await call(client, "characters_search", query=query)
    assert response["results"], f"no hit for {query!r}"
    return dict(response["results"][0])


async def test_tools_are_listed_read_only_with_output_schema(cards_client: Any) -> None:
    tools = {t.name: t for t in (await cards_client.list_tools()).tools}
    for name in ("characters_search", "characters_get"):
        assert tools[name].annotations.read_only_hint is True
        assert tools[name].title and tools[name].description
        assert "properties" in tools[name].output_schema
    # one shared hit schema: uri, title and score, and room for a card's own fields (creator…)
    hit_schema = tools["characters_search"].output_schema["properties"]["results"]["items"]
    assert {"uri", "title", "score"} <= set(hit_schema["required"])
    assert hit_schema.get("additionalProperties", True) is not False


async def test_a_hit_carries_name_creator_tags_and_field_loc(cards_client: Any) -> None:
    hit = await top(cards_client, "brigantine")
    assert hit["title"] == "Captain Mirelle"
    assert hit["uri"] == f"characters://{item_id(hit)}"
    assert hit["creator"] == "brinewriter" and "character_version" not in hit
    meta = (await call(cards_client, "characters_get", character_id=hit["uri"]))["meta"]
    assert meta["creator"] == "brinewriter" and meta["character_version"] == "1.3"
    assert hit["tags"] == ["fantasy", "nautical", "adventure", "mystery", "female"]
    assert hit["loc"]["field"] in {"description", "first_mes"}
    assert isinstance(hit["loc"]["approx_offset"], int)
    assert "brigantine" in hit["snippet"] and hit["matched_terms"] == ["brigantine"]
    assert hit["match_count"] == 2  # description and first message
    assert 0 < hit["score"] <= 1


@pytest.mark.parametrize(
    "query, title, field",
    [
        ("Hollowmere", "Ambrose Whitlock", "description"),
        ("guillemots", "Dr. Imogen Kestrel", "first_mes"),
        ("lentils", "Dr. Imogen Kestrel", "alternate_greetings"),
        ("Osric Pell", "Captain Mirelle", "character_book"),
        ("bosun", "Captain Mirelle", "character_book"),
        ('"200 words"', "Captain Mirelle", "post_history_instructions"),
        ("telemetry", "Nova", "mes_example"),
        ("figurengetriebene", "Nova", "creator_notes_multilingual"),
        ("puffinwatch", "Dr. Imogen Kestrel", "creator"),
        ("nautical", "Captain Mirelle", "tags"),
    ],
)
async def test_every_card_field_is_searchable_and_named_in_loc(
    cards_client: Any, query: str, title: str, field: str
) -> None:
    hit = await top(cards_client, query)
    assert (hit["title"], hit["loc"]["field"]) == (title, field)


async def test_v3_text_is_found_and_the_v2_fallback_is_not(cards_client: Any) -> None:
    hit = await top(cards_client, "heliotrope")
    assert hit["title"] == "Nova" and hit["nickname"] == "Nov"
    meta = (await call(cards_client, "characters_get", character_id=hit["uri"]))["meta"]
    assert meta["character_version"] == "2.1" and meta["spec"] == "chara_card_v3"
    assert (await call(cards_client, "characters_search", query="periwinkle"))["count"] == 0


async def test_name_is_weighted_above_body(cards_client: Any) -> None:
    response = await call(cards_client, "characters_search", query="Kestrel journalist")
    assert response["results"][0]["title"] == "Dr. Imogen Kestrel"


async def test_get_chunk_mode_returns_the_field_named_in_loc(cards_client: Any) -> None:
    hit = await top(cards_client, "Hollowmere")
    got = await call(
        cards_client,
        "characters_get",
        character_id=hit["uri"],
        loc={"field": "scenario"},
        retrieval={"mode": "chunk"},
    )
    assert got["content"].startswith("{{user}} has come into the library on a rainy Tuesday")
    assert got["meta"]["loc"]["field"] == "scenario"
    assert got["next"]["loc"]["field"] == "first_mes"


async def test_get_field_with_offset_picks_the_right_lorebook_entry(cards_client: Any) -> None:
    hit = await top(cards_client, "Osric")
    got = await call(
        cards_client, "characters_get", character_id=hit["uri"], loc=hit["loc"], retrieval={"mode": "chunk"}
    )
    assert got["content"].startswith("Keys: Saltglass, lighthouse")
    first = await call(
        cards_client,
        "characters_get",
        character_id=hit["uri"],
        loc={"field": "character_book"},
        retrieval={"mode": "chunk"},
    )
    assert first["content"].startswith("Keys: Teague, bosun")


async def test_get_full_reads_the_whole_card_with_headings(cards_client: Any) -> None:
    hit = await top(cards_client, "Hollowmere")
    got = await call(cards_client, "characters_get", character_id=hit["uri"], retrieval={"mode": "full"})
    assert got["content"].startswith("## Description\nAmbrose Whitlock is the elderly keeper")
    assert "## Example dialogue\n<START>" in got["content"]
    assert got["truncated"] is False and got["next"] is None
    assert got["meta"]["title"] == "Ambrose Whitlock"


async def test_get_with_query_anchors_on_the_matching_field(cards_client: Any) -> None:
    hit = await top(cards_client, "brigantine")
    got = await call(
        cards_client,
        "characters_get",
        character_id=hit["uri"],
        query="tattooed knuckles",
        retrieval={"mode": "chunk"},
    )
    assert got["meta"]["loc"]["field"] == "character_book" and "tattooed knuckles" in got["content"]


@pytest.mark.parametrize("max_tokens", [50, 120, 400, 1500])
@pytest.mark.parametrize("mode", ["snippet", "chunk", "chunk_with_siblings", "full", "auto"])
async def test_get_never_exceeds_the_token_budget(cards_client: Any, mode: str, max_tokens: int) -> None:
    hit = await top(cards_client, "brigantine")
    args = {
        "character_id": hit["uri"],
        "loc": hit["loc"],
        "retrieval": {"mode": mode, "max_tokens": max_tokens},
    }
    got = within_budget(await cards_client.call_tool("characters_get", args), max_tokens)
    if needed_budget(got, max_tokens) is not None:  # too small for content: never raised
        assert max_tokens <= 120 and not got["content"], got
        return
    assert got["mode_used"] == ("chunk_with_siblings" if mode == "auto" else mode)


async def test_chunk_with_siblings_grows_around_the_field(cards_client: Any) -> None:
    hit = await top(cards_client, "Hollowmere")
    args: dict[str, Any] = {"character_id": hit["uri"], "loc": {"field": "scenario"}}
    one = await call(cards_client, "characters_get", **args, retrieval={"mode": "chunk"})
    more = await call(
        cards_client, "characters_get", **args, retrieval={"mode": "chunk_with_siblings", "max_tokens": 2000}
    )
    assert one["content"] in more["content"] and "## Scenario" in more["content"]
    assert len(more["content"]) > len(one["content"])


async def test_unknown_character_id_names_the_field(cards_client: Any) -> None:
    result = await cards_client.call_tool("characters_get", {"character_id": "nope"})
    assert result.is_error and "character_id" in result.content[0].text


async def test_unknown_loc_field_names_the_field_and_the_allowed_ones(cards_client: Any) -> None:
    hit = await top(cards_client, "Hollowmere")
    result = await cards_client.call_tool(
        "characters_get", {"character_id": hit["uri"], "loc": {"field": "lorebook"}}
    )
    assert result.is_error
    text = result.content[0].text
    assert "loc.field" in text and "description" in text and "mes_example" in text


@pytest.mark.parametrize(
    "args, field", [({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"offset": -1}, "offset")]
)
async def test_out_of_range_paging_is_a_tool_error_naming_the_field(
    cards_client: Any, args: dict[str, Any], field: str
) -> None:
    result = await cards_client.call_tool("characters_search", {"query": "captain", **args})
    assert result.is_error and field in result.content[0].text


async def test_bad_retrieval_mode_names_the_field(cards_client: Any) -> None:
    hit = await top(cards_client, "Hollowmere")
    result = await cards_client.call_tool(
        "characters_get", {"character_id": hit["uri"], "retrieval": {"mode": "all"}}
    )
    assert result.is_error and "retrieval.mode" in result.content[0].text


async def test_pages_never_overlap_or_skip(cards_client: Any) -> None:
    query = "the user char of a"
    everything = await call(cards_client, "characters_search", query=query, limit=100)
    assert everything["count"] == 4
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await call(cards_client, "characters_search", query=query, limit=3, offset=offset)
        seen += [r["uri"] for r in page["results"]]
        offset = page["next_offset"]
    assert seen == [r["uri"] for r in everything["results"]]


@pytest.mark.parametrize("query", ['"unbalanced', "NEAR(a b", "title:foo AND", "{{char}}", "*", "((("])
async def test_fts_syntax_in_user_text_never_errors(cards_client: Any, query: str) -> None:
    result = await cards_client.call_tool("characters_search", {"query": query})
    assert not result.is_error, result.content[0].text


async def test_a_sillytavern_chat_links_to_the_card_by_name(data_dir: Path, client_factory: Any) -> None:
    await import_into(data_dir, "characters", CARDS)
    await import_into(data_dir, "chats", FIXTURES / "chats" / "sillytavern")
    async with client_factory() as client:
        card = await top(client, "brigantine")
        chats = await call(client, "chats_search", query="sextant", character_id=item_id(card))
        assert chats["count"] == 1
        assert chats["results"][0]["character_id"] == item_id(card)
