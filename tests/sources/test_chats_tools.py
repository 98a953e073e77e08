"""chats_search / chats_get through a real in-memory MCP client over the fixture chats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.chats.links import CharacterLinks
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.db import Migration, open_database
from knowledge_mcp.sources.storage.schema import chunked_tables_v1
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from tests.budgets import within_budget
from tests.conftest import FIXTURES, call, error, import_into, item_id

pytestmark = pytest.mark.anyio

CHATS = FIXTURES / "chats"
CARD_SQL = """INSERT INTO characters_items (item_id, origin, source_path, title, content, content_hash,
    created_at, last_modified, imported_at) VALUES (?,?,?,?,?,?,?,?,?)"""


@pytest.fixture
async def chats_client(data_dir: Path, client_factory: Any) -> Any:
    await import_into(data_dir, "chats", CHATS)
    async with client_factory() as client:
        yield client


async def top(client: Any, query: str, **args: Any) -> dict[str, Any]:
    response = await call(client, "chats_search", query=query, **args)
    assert response["count"] >= 1, f"nothing found for {query!r}"
    return dict(response["results"][0])


async def conversation_id(client: Any, query: str) -> str:
    return item_id(await top(client, query))


async def test_tools_are_listed_read_only_with_output_schema(chats_client: Any) -> None:
    tools = {t.name: t for t in (await chats_client.list_tools()).tools}
    for name in ("chats_search", "chats_get"):
        assert tools[name].annotations.read_only_hint is True
        assert tools[name].title and tools[name].output_schema
    assert "sender" in str(tools["chats_search"].output_schema)
    assert "message_index" in str(tools["chats_get"].description)


async def test_a_chat_hit_carries_conversation_sender_and_message_anchor(chats_client: Any) -> None:
    hit = await top(chats_client, "sextant")
    assert hit["title"] == "Captain Mirelle - 2025-06-01@14h22m10s"
    # the conversation is the uri's id, the message the loc's: no copies beside them
    assert hit["uri"] == f"chats://{item_id(hit)}" and "conversation_id" not in hit
    assert (hit["sender"], hit["role"], hit["loc"]["message_id"]) == ("Alex", "user", "5")
    assert hit["loc"] == {"message_id": "5"} and "message_id" not in hit
    assert "sextant" in hit["snippet"] and hit["matched_terms"] == ["sextant"]
    assert hit["character_name"] == "Captain Mirelle"
    meta = (await call(chats_client, "chats_get", conversation_id=hit["uri"], loc=hit["loc"]))["meta"]
    assert meta["created_at"] == "2025-06-01T14:22:00Z" and meta["loc"] == {"message_id": "5"}


async def test_chatgpt_hit_names_the_assistant_message_of_the_chosen_branch(chats_client: Any) -> None:
    hit = await top(chats_client, '"night grove" bittersweet')
    assert hit["title"] == "Names for orange sourdough loaf"
    assert (hit["sender"], hit["role"]) == ("assistant", "assistant")
    assert hit["loc"]["message_id"] == "ddd1dfb2-3b98-4ef8-9af6-1a26146d3f31"
    assert hit["match_count"] == 3  # the chosen answer, the user's reply and the description


@pytest.mark.parametrize("query", ["marmalade", "Seville", "narwhal", '"Widow\'s Reef"'])
async def test_abandoned_branches_and_unchosen_swipes_are_not_found(chats_client: Any, query: str) -> None:
    response = await call(chats_client, "chats_search", query=query)
    assert response["count"] == 0


async def test_code_blocks_are_searchable(chats_client: Any) -> None:
    assert (await top(chats_client, "hashlib sha256"))["title"] == "Find duplicate photos by hash"
    assert (await top(chats_client, "UK_POSTCODE"))["title"] == "UK postcode validation regex"


@pytest.mark.parametrize(
    "query, by, expected",
    [
        ("feedback", "title", ["Feedback on cover letter opening"]),
        ("feedback", "message", []),
        ("feedback", "both", ["Feedback on cover letter opening"]),
        ("sextant", "title", []),
        ("sextant", "message", ["Captain Mirelle - 2025-06-01@14h22m10s"]),
    ],
)
async def test_by_restricts_matching_to_titles_or_messages(
    chats_client: Any, query: str, by: str, expected: list[str]
) -> None:
    response = await call(chats_client, "chats_search", query=query, by=by)
    assert [r["title"] for r in response["results"]] == expected


async def test_by_message_anchors_on_a_message_that_contains_the_words(chats_client: Any) -> None:
    hit = await top(chats_client, "Islay", by="message")
    assert hit["title"] == "Three days on Islay" and "Islay" in hit["snippet"]
    assert hit["match_count"] == 2  # the two messages naming Islay
    assert (await top(chats_client, "Islay", by="both"))[
        "match_count"
    ] == 4  # every message carries the title


async def test_sender_filter_keeps_only_that_speakers_messages(chats_client: Any) -> None:
    mirelle = await top(chats_client, "coffee", sender="captain mirelle")
    assert mirelle["sender"] == "Captain Mirelle"
    alex = await top(chats_client, "coffee", sender="Alex")
    assert alex["sender"] == "Alex" and alex["loc"]["message_id"] != mirelle["loc"]["message_id"]
    assert "coffee" in alex["snippet"].lower()
    by_role = await call(chats_client, "chats_search", query="heat pump", sender="user")
    assert {r["role"] for r in by_role["results"]} == {"user"}
    assert (await call(chats_client, "chats_search", query="sextant", sender="Captain Mirelle"))["count"] == 0


async def test_character_links_resolve_card_names_case_insensitively(data_dir: Path) -> None:
    db = await open_database(data_dir / "cards.db", (Migration(1, "cards", chunked_tables_v1("characters")),))
    try:
        await db.conn.execute(CARD_SQL, ("card1", "o", "p", "Captain Mirelle", "", "h", "t", "t", "t"))
        links = CharacterLinks(SqliteStore(db, "characters"))
        assert await links.id_for("captain MIRELLE") == "card1"
        assert await links.name_of("card1") == "Captain Mirelle"
        assert await links.id_for("Nova") is None and await links.name_of("nope") is None
        await db.conn.execute("DROP TABLE characters_items")
        assert (
            await CharacterLinks(SqliteStore(db, "characters")).id_for("Captain Mirelle") is None
        )  # no table: no link, no error
    finally:
        await db.close()
    assert await CharacterLinks(None).id_for("Captain Mirelle") is None


async def test_chat_hits_link_to_the_character_card_and_filter_by_it(
    data_dir: Path, chats_client: Any
) -> None:
    if "characters" not in SOURCES:
        # Without a characters source there is no link, and no error either.
        assert "character_id" not in await top(chats_client, "sextant")
        assert "character_id" in await error(chats_client, "chats_search", query="coffee", character_id="x")
        return
    await import_into(data_dir, "characters", FIXTURES / "characters")
    cards = (await call(chats_client, "characters_search", query="Mirelle OR Ambrose", limit=10))["results"]
    mirelle = next(item_id(r) for r in cards if r["title"] == "Captain Mirelle")
    other = next(item_id(r) for r in cards if r["title"] != "Captain Mirelle")
    hit = await top(chats_client, "sextant")
    assert hit["character_id"] == mirelle
    filtered = await call(chats_client, "chats_search", query="coffee OR boiler", character_id=mirelle)
    assert [r["character_name"] for r in filtered["results"]] == ["Captain Mirelle"]
    assert (await call(chats_client, "chats_search", query="coffee", character_id=other))["count"] == 0
    got = await call(chats_client, "chats_get", conversation_id=hit["uri"])
    assert got["meta"]["character_id"] == mirelle
    assert "character_id" in await error(
        chats_client, "chats_search", query="coffee", character_id="no-such-card"
    )


async def test_get_defaults_to_a_page_of_structured_messages(chats_client: Any) -> None:
    cid = await conversation_id(chats_client, "sextant")
    first = await call(chats_client, "chats_get", conversation_id=cid, page_size=4)
    assert first["mode_used"] == "page" and first["page"] == 1 and first["page_count"] == 3
    assert [m["message_index"] for m in first["content"]] == [0, 1, 2, 3]
    assert set(first["content"][1]) == {"message_id", "message_index", "role", "sender", "timestamp", "text"}
    assert (
        first["content"][1]["sender"] == "Alex"
        and first["content"][1]["timestamp"] == "2025-06-01T14:24:00+00:00"
    )
    assert first["next"] == {"page": 2, "page_size": 4}
    last = await call(chats_client, "chats_get", conversation_id=cid, page=3, page_size=4)
    assert [m["message_index"] for m in last["content"]] == [8, 9, 10] and last["next"] is None
    assert first["meta"]["uri"] == f"chats://{cid}" and first["message_count"] == 11
    text = (
        (await chats_client.call_tool("chats_get", {"conversation_id": cid, "page_size": 2})).content[0].text
    )
    assert "#1 Alex (user) [2025-06-01T14:24:00+00:00]:" in text and "continue with" in text


async def test_chunk_with_siblings_returns_neighbouring_messages_within_the_budget(chats_client: Any) -> None:
    hit = await top(chats_client, "sextant")
    for max_tokens in (250, 400, 2000):
        retrieval = {"mode": "chunk_with_siblings", "max_tokens": max_tokens, "sibling_window": 3}
        args = {"conversation_id": hit["uri"], "loc": hit["loc"], "retrieval": retrieval}
        got = within_budget(await chats_client.call_tool("chats_get", args), max_tokens)
        indexes = [m["message_index"] for m in got["content"]]
        assert 5 in indexes and indexes == list(range(indexes[0], indexes[-1] + 1))
        assert got["mode_used"] == "chunk_with_siblings"
        # a tight budget trims the meta to the fields every result has (no loc); else loc is the hit
        assert got["meta"].get("loc", {"message_id": "5"})["message_id"] == "5"
    assert indexes == [2, 3, 4, 5, 6, 7, 8]  # the widest budget grew three each side
    assert got["next"] == {
        "loc": {"conversation_id": item_id(hit), "message_id": "9", "message_index": 9},
        "retrieval": {"mode": "chunk_with_siblings", "max_tokens": 2000},
    }


async def test_get_anchors_on_the_best_match_of_query_without_loc(chats_client: Any) -> None:
    cid = await conversation_id(chats_client, "Islay")
    got = await call(
        chats_client, "chats_get", conversation_id=cid, query="Lossit Kitchen", retrieval={"mode": "chunk"}
    )
    assert [m["message_index"] for m in got["content"]] == [2]
    assert got["content"][0]["text"] == "Is the Lossit Kitchen worth booking?"


async def test_a_message_longer_than_the_budget_is_cut_and_next_resumes_it(chats_client: Any) -> None:
    cid = await conversation_id(chats_client, "hashlib")
    got = await call(
        chats_client,
        "chats_get",
        conversation_id=cid,
        loc={"message_index": 1},
        retrieval={"mode": "chunk_with_siblings", "max_tokens": 260},
    )
    assert got["truncated"] is True and got["estimated_tokens"] <= 260
    (piece,) = got["content"]
    assert piece["text"].startswith("Sure. The safest approach")
    whole = await call(
        chats_client,
        "chats_get",
        conversation_id=cid,
        loc={"message_index": 1},
        retrieval={"mode": "chunk", "max_tokens": 4000},
    )
    rest = await call(
        chats_client,
        "chats_get",
        conversation_id=cid,
        loc=got["next"]["loc"],
        retrieval=got["next"]["retrieval"],
    )
    assert rest["mode_used"] == "full" and rest["content"][0]["message_index"] == 1
    joined = piece["text"] + rest["content"][0]["text"]
    assert whole["content"][0]["text"].startswith(joined) and len(joined) > len(piece["text"])


async def test_full_mode_pages_forward_without_gaps_or_overlaps(chats_client: Any) -> None:
    cid = await conversation_id(chats_client, "heat pump")
    seen: list[int] = []
    args: dict[str, Any] = {"conversation_id": cid, "retrieval": {"mode": "full", "max_tokens": 400}}
    for _ in range(50):
        got = within_budget(await chats_client.call_tool("chats_get", args), 400)
        seen += [m["message_index"] for m in got["content"] if m["message_index"] not in seen[-1:]]
        if got["next"] is None:
            break
        args = {"conversation_id": cid, "loc": got["next"]["loc"], "retrieval": got["next"]["retrieval"]}
    assert seen == list(range(7))


async def test_page_mode_stays_within_max_tokens_and_continues_where_it_stopped(chats_client: Any) -> None:
    cid = await conversation_id(chats_client, "heat pump")
    args = {"conversation_id": cid, "retrieval": {"max_tokens": 400}}
    got = within_budget(await chats_client.call_tool("chats_get", args), 400)
    assert got["mode_used"] == "page" and got["truncated"] is True
    indexes = [m["message_index"] for m in got["content"]]
    assert indexes == list(range(len(indexes))) and len(indexes) >= 2
    # next resumes where the page stopped: in the message cut to fill the budget, or after it
    assert got["next"]["loc"]["message_index"] in (indexes[-1], indexes[-1] + 1)
    assert got["next"]["retrieval"]["mode"] == "full"


@pytest.mark.parametrize(
    "args, field",
    [
        ({"page": 0}, "page"),
        ({"page": 4, "page_size": 4}, "page"),
        ({"page_size": 0}, "page_size"),
        ({"page_size": 201}, "page_size"),
        ({"retrieval": {"mode": "everything"}}, "mode"),
        ({"loc": {"message_id": "nope"}}, "loc.message_id"),
        ({"loc": {"message_index": 99}}, "loc.message_index"),
        ({"loc": {"conversation_id": "other", "message_index": 0}}, "loc.conversation_id"),
    ],
)
async def test_bad_get_arguments_are_tool_errors_naming_the_field(
    chats_client: Any, args: dict[str, Any], field: str
) -> None:
    cid = await conversation_id(chats_client, "sextant")
    assert field in await error(chats_client, "chats_get", conversation_id=cid, **args)


async def test_unknown_conversation_id_names_the_field(chats_client: Any) -> None:
    assert "conversation_id" in await error(chats_client, "chats_get", conversation_id="no-such-chat")


@pytest.mark.parametrize(
    "args, field", [({"by": "subject"}, "by"), ({"limit": 0}, "limit"), ({"offset": -1}, "offset")]
)
async def test_bad_search_arguments_are_tool_errors_naming_the_field(
    chats_client: Any, args: dict[str, Any], field: str
) -> None:
    assert field in await error(chats_client, "chats_search", query="coffee", **args)


@pytest.mark.parametrize(
    "query", ['"unbalanced', "title:foo AND", "NEAR(a b", "{body} : x", "*", "(((", "🙂"]
)
@pytest.mark.parametrize("by", ["both", "title", "message"])
async def test_fts_syntax_in_user_text_never_errors(chats_client: Any, query: str, by: str) -> None:
    result = await chats_client.call_tool("chats_search", {"query": query, "by": by})
    assert not result.is_error, result.content[0].text


async def test_pages_of_results_do_not_overlap(chats_client: Any) -> None:
    query = "the OR and OR you"
    everything = await call(chats_client, "chats_search", query=query, limit=100)
    first = await call(chats_client, "chats_search", query=query, limit=3)
    second = await call(chats_client, "chats_search", query=query, limit=3, offset=first["next_offset"])
    ids = [r["uri"] for r in first["results"] + second["results"]]
    assert ids == [r["uri"] for r in everything["results"]][:6] and len(set(ids)) == 6
