"""prompts_search / prompts_get through a real in-memory MCP client over the fixture prompts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.budgets import needed_budget, within_budget
from tests.conftest import FIXTURES, call, import_into, item_id

pytestmark = pytest.mark.anyio

PROMPTS = FIXTURES / "prompts"


@pytest.fixture
async def prompts_client(data_dir: Path, client_factory: Any) -> Any:
    await import_into(data_dir, "prompts", PROMPTS)
    async with client_factory() as client:
        yield client


async def titles(client: Any, query: str, **args: Any) -> list[str]:
    response = await call(client, "prompts_search", query=query, **args)
    return [r["title"] for r in response["results"]]


async def error_text(client: Any, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error
    return str(result.content[0].text)


async def test_tools_are_listed_read_only_with_output_schema(prompts_client: Any) -> None:
    tools = {t.name: t for t in (await prompts_client.list_tools()).tools}
    for name in ("prompts_search", "prompts_get"):
        assert tools[name].annotations.read_only_hint is True
        assert tools[name].title and tools[name].description
        assert "properties" in tools[name].output_schema
    assert "system_prompt" in str(tools["prompts_search"].input_schema["properties"]["fields"])


async def test_a_hit_carries_author_keywords_and_field_loc(prompts_client: Any) -> None:
    hit = (await call(prompts_client, "prompts_search", query="deserialisation"))["results"][0]
    assert hit["title"] == "Code Reviewer" and hit["uri"] == f"prompts://{item_id(hit)}"
    assert hit["author"] == "Jonas Eklund"
    assert hit["keywords"] == ["code review", "pull request", "engineering", "security"]
    assert "tags" not in hit  # a prompt's tags are its keywords
    assert hit["loc"]["field"] == "system_prompt" and isinstance(hit["loc"]["approx_offset"], int)
    assert "deserialisation" in hit["snippet"] and hit["matched_terms"] == ["deserialisation"]
    assert 0 < hit["score"] <= 1


@pytest.mark.parametrize(
    "query, title, field",
    [
        ("unassigned", "Meeting Summarizer", "system_prompt"),
        ('"correlated subqueries"', "SQL Explainer", "system_prompt"),
        ("exclamation", "Email Polisher", "system_prompt"),
        ("recipient", "Email Polisher", "user_prompt"),
        ("Slack", "Meeting Summarizer", "details"),
        ("Oyelaran", "SQL Explainer", "author"),
        ("homework", "Socratic Tutor", "keywords"),
        ("Polisher", "Email Polisher", "details"),  # a name hit points at what the prompt is for
    ],
)
async def test_every_format_and_field_is_searchable(
    prompts_client: Any, query: str, title: str, field: str
) -> None:
    hit = (await call(prompts_client, "prompts_search", query=query))["results"][0]
    assert (hit["title"], hit["loc"]["field"]) == (title, field)


@pytest.mark.parametrize(
    "query, fields, expected",
    [
        ("polisher", None, ["Email Polisher"]),
        ("polisher", ["name"], ["Email Polisher"]),
        # the FTS title column holds the name in every chunk: it must not make other fields match
        ("polisher", ["system_prompt", "details", "user_prompt"], []),
        ("homework", ["keywords"], ["Socratic Tutor"]),
        ("homework", ["system_prompt"], []),
        ("Oyelaran", ["author"], ["SQL Explainer"]),
        ("Oyelaran", ["details", "keywords"], []),
        ("diff", ["user_prompt"], ["Code Reviewer"]),
        ("diff", ["system_prompt"], []),
    ],
)
async def test_fields_restrict_where_a_prompt_may_match(
    prompts_client: Any, query: str, fields: list[str] | None, expected: list[str]
) -> None:
    assert await titles(prompts_client, query, fields=fields) == expected


async def test_fields_filter_names_the_matching_field_and_counts_only_those(prompts_client: Any) -> None:
    everywhere = (await call(prompts_client, "prompts_search", query="meetings"))["results"][0]
    only = (await call(prompts_client, "prompts_search", query="meetings", fields=["keywords"]))["results"][0]
    assert everywhere["title"] == only["title"] == "Meeting Summarizer"
    assert everywhere["match_count"] > 1 and "match_count" not in only  # 1, the default
    assert only["loc"]["field"] == "keywords"


async def test_unknown_field_is_a_tool_error_naming_fields(prompts_client: Any) -> None:
    text = await error_text(prompts_client, "prompts_search", query="email", fields=["body"])
    assert "fields" in text and "system_prompt" in text


async def test_empty_fields_list_is_a_tool_error_naming_fields(prompts_client: Any) -> None:
    text = await error_text(prompts_client, "prompts_search", query="email", fields=[])
    assert "fields" in text


async def test_get_by_exact_name_in_any_case(prompts_client: Any) -> None:
    got = await call(
        prompts_client, "prompts_get", prompt_id_or_name="sql EXPLAINER", retrieval={"mode": "full"}
    )
    assert got["meta"]["title"] == "SQL Explainer" and got["meta"]["author"] == "Marcus Oyelaran"
    assert got["content"].startswith("## Name\nSQL Explainer\n\n## Author\nMarcus Oyelaran")
    assert "## User prompt\nExplain this query." in got["content"]
    assert got["truncated"] is False and got["next"] is None


async def test_get_by_id_with_a_field_loc_returns_that_field(prompts_client: Any) -> None:
    hit = (await call(prompts_client, "prompts_search", query="Socratic"))["results"][0]
    got = await call(
        prompts_client,
        "prompts_get",
        prompt_id_or_name=item_id(hit),
        loc={"field": "user_prompt"},
        retrieval={"mode": "chunk"},
    )
    assert got["content"] == "I'm stuck on this: {{question}}"
    assert got["meta"]["uri"] == hit["uri"] and got["meta"]["loc"]["field"] == "user_prompt"
    assert got["next"]["loc"]["field"] == "keywords"


async def test_get_with_query_anchors_on_the_matching_field(prompts_client: Any) -> None:
    got = await call(
        prompts_client,
        "prompts_get",
        prompt_id_or_name="Code Reviewer",
        query="BLOCKER",
        retrieval={"mode": "chunk"},
    )
    assert got["meta"]["loc"]["field"] == "system_prompt" and "BLOCKER" in got["content"]


async def test_unknown_prompt_names_the_field(prompts_client: Any) -> None:
    text = await error_text(prompts_client, "prompts_get", prompt_id_or_name="Haiku Maker")
    assert "prompt_id_or_name" in text and "Haiku Maker" in text


async def test_unknown_loc_field_is_a_tool_error(prompts_client: Any) -> None:
    text = await error_text(
        prompts_client, "prompts_get", prompt_id_or_name="Code Reviewer", loc={"field": "body"}
    )
    assert "loc.field" in text and "user_prompt" in text


@pytest.mark.parametrize("max_tokens", [50, 100, 300, 1000])
@pytest.mark.parametrize("mode", ["snippet", "chunk", "chunk_with_siblings", "full", "auto"])
async def test_get_never_exceeds_the_token_budget(prompts_client: Any, mode: str, max_tokens: int) -> None:
    hit = (await call(prompts_client, "prompts_search", query="indexes"))["results"][0]
    args = {
        "prompt_id_or_name": hit["uri"],
        "loc": hit["loc"],
        "retrieval": {"mode": mode, "max_tokens": max_tokens},
    }
    got = within_budget(await prompts_client.call_tool("prompts_get", args), max_tokens)
    if needed_budget(got, max_tokens) is not None:  # too small for content: never raised
        assert max_tokens <= 120 and not got["content"], got
        return
    assert got["mode_used"] == ("chunk_with_siblings" if mode == "auto" else mode)


async def test_full_mode_pages_through_the_prompt_without_gaps(prompts_client: Any) -> None:
    whole = (
        await call(
            prompts_client, "prompts_get", prompt_id_or_name="SQL Explainer", retrieval={"mode": "full"}
        )
    )["content"]
    parts: list[str] = []
    small = await prompts_client.call_tool(
        "prompts_get", {"prompt_id_or_name": "SQL Explainer", "retrieval": {"mode": "full", "max_tokens": 60}}
    )
    needed = needed_budget(within_budget(small, 60), 60)  # the least that returns content
    assert needed is not None
    args: dict[str, Any] = {
        "prompt_id_or_name": "SQL Explainer",
        "retrieval": {"mode": "full", "max_tokens": needed},  # room for a little content a page
    }
    for _ in range(40):
        got = await call(prompts_client, "prompts_get", **args)
        parts.append(got["content"])
        if got["next"] is None:
            break
        args = {
            "prompt_id_or_name": "SQL Explainer",
            "loc": got["next"]["loc"],
            "retrieval": got["next"]["retrieval"],
        }
    assert len(parts) > 3 and "".join(parts) == whole


@pytest.mark.parametrize(
    "args, field", [({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"offset": -1}, "offset")]
)
async def test_out_of_range_paging_is_a_tool_error_naming_the_field(
    prompts_client: Any, args: dict[str, Any], field: str
) -> None:
    assert field in await error_text(prompts_client, "prompts_search", query="email", **args)


async def test_pages_never_overlap_or_skip_with_a_fields_filter(prompts_client: Any) -> None:
    query, fields = "you the a of", ["system_prompt", "user_prompt"]
    everything = await call(prompts_client, "prompts_search", query=query, fields=fields, limit=100)
    assert everything["count"] == 5
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await call(
            prompts_client, "prompts_search", query=query, fields=fields, limit=2, offset=offset
        )
        seen += [r["uri"] for r in page["results"]]
        assert page["total_estimated"] == 5
        offset = page["next_offset"]
    assert seen == [r["uri"] for r in everything["results"]]


@pytest.mark.parametrize(
    "query", ['"unbalanced', "NEAR(a b", "body:foo", "{body} : x", "*", "(((", "{{draft}}"]
)
@pytest.mark.parametrize("fields", [None, ["system_prompt"]])
async def test_fts_syntax_in_user_text_never_errors(prompts_client: Any, query: str, fields: Any) -> None:
    result = await prompts_client.call_tool("prompts_search", {"query": query, "fields": fields})
    assert not result.is_error, result.content[0].text


async def test_snippet_length_is_clamped_with_a_warning(prompts_client: Any) -> None:
    response = await call(
        prompts_client, "prompts_search", query="email", fields=["details"], snippet_length=5
    )
    assert any("snippet_length" in w for w in response["warnings"])
    assert response["results"] and all(len(r["snippet"]) <= 50 for r in response["results"])
