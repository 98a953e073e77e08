"""notes_search / notes_get through a real in-memory MCP client over the fixture vault."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.budgets import needed_budget, within_budget
from tests.conftest import FIXTURES, import_into, item_id

pytestmark = pytest.mark.anyio

VAULT = FIXTURES / "notes"


@pytest.fixture
async def notes_client(data_dir: Path, client_factory: Any) -> Any:
    await import_into(data_dir, "notes", VAULT)
    async with client_factory() as client:
        yield client


async def search(client: Any, **args: Any) -> dict[str, Any]:
    result = await client.call_tool("notes_search", args)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def test_tools_are_listed_read_only_with_output_schema(notes_client: Any) -> None:
    tools = {t.name: t for t in (await notes_client.list_tools()).tools}
    for name in ("notes_search", "notes_get"):
        assert tools[name].annotations.read_only_hint is True
        assert tools[name].output_schema and "properties" in tools[name].output_schema
        assert tools[name].title


async def test_distinctive_word_finds_its_note_with_matched_terms_and_snippet(notes_client: Any) -> None:
    response = await search(notes_client, query="levain autolyse")
    top = response["results"][0]
    assert top["title"].lower().startswith("sourdough") or "sourdough" in top["title"].lower()
    assert set(top["matched_terms"]) == {"levain", "autolyse"}
    assert "levain" in top["snippet"].lower() or "autolyse" in top["snippet"].lower()
    assert top["uri"] == f"notes://{item_id(top)}"
    assert 0 < top["score"] <= 1
    # hidden folders (.obsidian, .trash) are not imported
    assert response["count"] == 1


async def test_phrase_query_matches_the_phrase(notes_client: Any) -> None:
    response = await search(notes_client, query='"cutover window"')
    assert response["count"] == 1
    assert "cutover window" in response["results"][0]["matched_terms"]


async def test_keywords_filter_keeps_only_tagged_notes(notes_client: Any) -> None:
    response = await search(
        notes_client, query="recipe OR eggs OR flour OR water", keywords=["cooking"], limit=50
    )
    assert response["count"] >= 2
    assert all("cooking" in [t.lower() for t in r["tags"]] for r in response["results"])


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "NEAR(a b",
        "--force",
        "title:foo AND",
        "pg_dump*",
        "e-mail don't",
        "🙂🙂",
        "*",
        "x" * 10_000,
        "(((",
        "AND OR NOT",
        '"" ""',
        "col:val ^start",
    ],
)
async def test_fts_syntax_in_user_text_never_errors(notes_client: Any, query: str) -> None:
    result = await notes_client.call_tool("notes_search", {"query": query})
    assert not result.is_error, result.content[0].text


@pytest.mark.parametrize(
    "args, field", [({"limit": 0}, "limit"), ({"limit": 1000}, "limit"), ({"offset": -1}, "offset")]
)
async def test_out_of_range_paging_is_a_tool_error_naming_the_field(
    notes_client: Any, args: dict[str, Any], field: str
) -> None:
    result = await notes_client.call_tool("notes_search", {"query": "bread", **args})
    assert result.is_error
    assert field in result.content[0].text
    # the server keeps serving
    assert (await notes_client.call_tool("notes_search", {"query": "bread"})).is_error is False


async def test_pages_never_overlap_or_skip(notes_client: Any) -> None:
    everything = await search(notes_client, query="the notes and a of to", limit=100)
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await search(notes_client, query="the notes and a of to", limit=3, offset=offset)
        seen += [r["uri"] for r in page["results"]]
        assert page["has_more"] == (page["next_offset"] is not None)
        offset = page["next_offset"]
    assert seen == [r["uri"] for r in everything["results"]]
    assert len(seen) == len(set(seen))


async def test_snippet_length_is_clamped_with_a_warning(notes_client: Any) -> None:
    response = await search(notes_client, query="bread", snippet_length=5)
    assert any("snippet_length" in w for w in response["warnings"])
    assert all(len(r["snippet"]) <= 50 for r in response["results"])


async def test_unknown_note_id_names_the_field(notes_client: Any) -> None:
    result = await notes_client.call_tool("notes_get", {"note_id": "does-not-exist"})
    assert result.is_error and "note_id" in result.content[0].text


async def test_bad_retrieval_mode_names_the_field(notes_client: Any) -> None:
    top = (await search(notes_client, query="levain"))["results"][0]
    result = await notes_client.call_tool(
        "notes_get", {"note_id": top["uri"], "retrieval": {"mode": "everything"}}
    )
    assert result.is_error and "retrieval.mode" in result.content[0].text


@pytest.mark.parametrize("max_tokens", [50, 120, 400, 1500])
@pytest.mark.parametrize("mode", ["chunk", "chunk_with_siblings", "full", "auto"])
async def test_get_never_exceeds_the_token_budget(notes_client: Any, mode: str, max_tokens: int) -> None:
    top = (await search(notes_client, query="cormorant OR heron OR plumage"))["results"][0]
    args = {"note_id": top["uri"], "loc": top["loc"], "retrieval": {"mode": mode, "max_tokens": max_tokens}}
    got = within_budget(await notes_client.call_tool("notes_get", args), max_tokens)
    if needed_budget(got, max_tokens) is not None:  # too small for content: never raised
        assert max_tokens <= 120 and not got["content"], got
        return
    assert got["mode_used"] == ("chunk_with_siblings" if mode == "auto" else mode)


async def test_full_mode_pages_through_a_huge_note_without_gaps(notes_client: Any) -> None:
    top = (await search(notes_client, query="field guide birds", limit=1))["results"][0]
    parts: list[str] = []
    args: dict[str, Any] = {"note_id": top["uri"], "retrieval": {"mode": "full", "max_tokens": 4000}}
    for _ in range(50):
        got = (await notes_client.call_tool("notes_get", args)).structured_content
        parts.append(got["content"])
        if got["next"] is None:
            break
        args = {"note_id": top["uri"], "loc": got["next"]["loc"], "retrieval": got["next"]["retrieval"]}
    whole = "".join(parts)
    assert len(parts) > 2
    assert len(whole) > 60_000


async def test_chunk_with_siblings_grows_around_the_anchor(notes_client: Any) -> None:
    top = (await search(notes_client, query="field guide birds", limit=1))["results"][0]
    one = (
        await notes_client.call_tool(
            "notes_get", {"note_id": top["uri"], "loc": {"chunk_index": 3}, "retrieval": {"mode": "chunk"}}
        )
    ).structured_content
    more = (
        await notes_client.call_tool(
            "notes_get",
            {
                "note_id": top["uri"],
                "loc": {"chunk_index": 3},
                "retrieval": {"mode": "chunk_with_siblings", "max_tokens": 2000},
            },
        )
    ).structured_content
    assert one["content"] in more["content"]
    assert len(more["content"]) > len(one["content"])


async def test_get_with_query_and_no_loc_anchors_on_the_match(notes_client: Any) -> None:
    top = (await search(notes_client, query="field guide birds", limit=1))["results"][0]
    got = (
        await notes_client.call_tool(
            "notes_get", {"note_id": top["uri"], "query": "bluethroat", "retrieval": {"mode": "chunk"}}
        )
    ).structured_content
    assert "bluethroat" in got["content"].lower()
    assert got["meta"]["loc"]["chunk_index"] > 0


async def test_order_by_recent_sorts_by_last_modified(notes_client: Any) -> None:
    response = await search(notes_client, query="the", order_by="recent", limit=50)
    stamps = [r["last_modified"] for r in response["results"]]
    assert stamps == sorted(stamps, reverse=True)
