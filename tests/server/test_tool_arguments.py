"""Arguments a model got wrong are answered in one plain sentence naming the field, what was
given and what is allowed; an argument a tool does not take is named with the valid ones."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.anyio

LIBRARY_WORDS = ("pydantic", "validation error", "http", "type=", "input_value", "Arguments")


async def error_text(client: Any, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result
    text = str(result.content[0].text)
    assert not [w for w in LIBRARY_WORDS if w in text], text
    assert text.count("\n") == 0 and text.endswith("."), text
    return text


@pytest.mark.parametrize(
    ("tool", "arguments", "names"),
    [
        ("notes_search", {"query": "bread", "limit": "ten"}, ["limit", "'ten'", "1 to 100"]),
        ("notes_search", {"query": "bread", "limit": 500}, ["limit", "500", "1 to 100"]),
        (
            "notes_search",
            {"query": "bread", "order_by": "newest"},
            ["order_by", "'newest'", "relevance, recent"],
        ),
        ("notes_search", {"limit": 5}, ["query is required"]),
        ("knowledge_search", {"query": "bread", "sources": "notes"}, ["sources", "'notes'", "a list"]),
        ("notes_get", {"note_id": 7}, ["note_id", "7", "text"]),
    ],
)
async def test_a_bad_value_is_one_sentence_naming_the_field_and_what_is_allowed(
    client_factory: Any, tool: str, arguments: dict[str, Any], names: list[str]
) -> None:
    async with client_factory() as client:
        text = await error_text(client, tool, arguments)
    assert all(n in text for n in names), text


async def test_an_unknown_argument_is_named_with_the_tools_arguments(client_factory: Any) -> None:
    async with client_factory() as client:
        text = await error_text(client, "notes_search", {"query": "bread", "limt": 5})
        assert "'limt'" in text and "query, keywords, limit, offset" in text
        fine = await client.call_tool("notes_search", {"query": "bread", "limit": 5})
    assert not fine.is_error


async def test_dotted_tool_names_get_the_same_answers(client_factory: Any) -> None:
    async with client_factory(tool_names="dotted") as client:
        text = await error_text(client, "notes.search", {"query": "bread", "limit": "ten"})
    assert "limit" in text


BOOLEANS_FOR_NUMBERS = [
    # (tool, arguments, the field the sentence names)
    ("notes_update", {"note_id": "n", "content": "x", "expected_version": True}, "expected_version"),
    ("notes_search", {"query": "bread", "limit": True}, "limit"),
    ("notes_search", {"query": "bread", "offset": False}, "offset"),
    ("knowledge_search", {"query": "bread", "min_score": True}, "min_score"),
    ("notes_get", {"note_id": "n", "retrieval": {"max_tokens": True}}, "retrieval.max_tokens"),
    ("notes_get", {"note_id": "n", "loc": {"chunk_index": True}}, "loc.chunk_index"),
    ("chats_get", {"conversation_id": "c", "page": True}, "page"),
]


@pytest.mark.parametrize(("tool", "arguments", "field"), BOOLEANS_FOR_NUMBERS)
async def test_true_or_false_where_a_number_is_expected_is_refused_naming_the_field(
    client_factory: Any, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async with client_factory() as client:
        text = await error_text(client, tool, arguments)
    assert text.startswith(f"{field}: must be a"), text
    assert "not true or false" in text


async def test_true_or_false_stays_fine_where_the_tool_takes_a_boolean(client_factory: Any) -> None:
    async with client_factory() as client:
        result = await client.call_tool(
            "knowledge_search", {"query": "bread", "rerank": False, "expand": True}
        )
    assert not result.is_error, result.content[0].text
