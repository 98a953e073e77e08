"""knowledge_search through a real MCP client: merge, filters, pagination, failures, sessions."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.source import ChunkedSource
from knowledge_mcp.sources.storage.db import database_path
from tests.aggregator.conftest import structured
from tests.conftest import FIXTURES, import_into, source_of

ROUNDING = 0.0005  # scores on the wire have three digits

pytestmark = pytest.mark.anyio


async def search(client: Client, **args: Any) -> dict[str, Any]:
    return structured(await client.call_tool("knowledge_search", args))


async def every_page(client: Client, **args: Any) -> list[str]:
    """The uris of every page, following next_offset from 0; has_more agrees on each page."""
    uris: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await search(client, offset=offset, **args)
        uris += [r["uri"] for r in page["results"]]
        offset = page["next_offset"]
        assert page["has_more"] == (offset is not None)
    return uris


async def test_results_of_several_sources_come_in_one_list_sorted_by_score(
    connect: Callable[..., Client],
) -> None:
    async with connect() as client:
        out = await search(client, query="meeting", seen="show")
    sources = {source_of(r) for r in out["results"]}
    scores = [r["score"] for r in out["results"]]
    assert len(sources) >= 2, sources
    assert scores == sorted(scores, reverse=True)
    assert out["top_score"] == scores[0] and out["count"] == len(scores)
    assert not any("rank" in r for r in out["results"])  # the rank is the place in the list


async def test_merged_results_carry_the_snippet_and_matched_terms_of_the_source_tool(
    connect: Callable[..., Client],
) -> None:
    async with connect() as client:
        merged = await search(client, query="meeting agenda", seen="show")
        own = structured(await client.call_tool("notes_search", {"query": "meeting agenda"}))
    by_uri = {r["uri"]: r for r in own["results"]}
    notes = [r for r in merged["results"] if source_of(r) == "notes"]
    assert notes
    for result in notes:
        assert result["snippet"] and result["matched_terms"]
        assert result["snippet"] == by_uri[result["uri"]]["snippet"]
        assert result["matched_terms"] == by_uri[result["uri"]]["matched_terms"]


async def test_results_keep_their_source_specific_fields(connect: Callable[..., Client]) -> None:
    async with connect() as client:
        out = await search(client, query="offsite", sources=["media"], seen="show")
        chats = await search(client, query="the", sources=["chats"], seen="show", limit=3)
    email = next(r for r in out["results"] if r.get("media_type") == "email")
    assert email["from"] and email["title"]  # an email's subject is its title
    assert all("sender" in r and "role" in r for r in chats["results"])


async def test_order_by_recent_sorts_on_last_modified(connect: Callable[..., Client]) -> None:
    async with connect() as client:
        out = await search(client, query="the", order_by="recent", seen="show", limit=30)
    dates = [r["last_modified"] for r in out["results"]]
    assert dates == sorted(dates, reverse=True)


async def test_pages_never_overlap_or_skip(connect: Callable[..., Client]) -> None:
    async with connect() as client:
        everything = await search(client, query="the", limit=100, seen="show")
        pages = await every_page(client, query="the", limit=7, seen="show")
    assert pages == [r["uri"] for r in everything["results"]]
    assert len(pages) == len(set(pages)) == everything["total_estimated"]


async def test_pages_with_the_session_hiding_seen_items_never_overlap_or_skip(
    connect: Callable[..., Client],
) -> None:
    async with connect() as client:
        everything = await search(client, query="the", limit=100, seen="show", session_id="paging-all")
        pages = await every_page(client, query="the", limit=6, session_id="paging-hide")
    assert pages == [r["uri"] for r in everything["results"]]


async def test_pages_with_the_session_downranking_seen_items_never_overlap_or_skip(
    connect: Callable[..., Client],
) -> None:
    async with connect() as client:
        # Some items are already seen, so downrank reorders the list.
        await search(client, query="sourdough", limit=3, session_id="paging-downrank")
        everything = await search(client, query="the", limit=100, seen="downrank", session_id="paging-all-2")
        await search(client, query="sourdough", limit=3, session_id="paging-all-2")
        reference = await search(client, query="the", limit=100, seen="downrank", session_id="paging-all-2")
        pages = await every_page(client, query="the", limit=6, seen="downrank", session_id="paging-downrank")
    assert len(pages) == len(set(pages)) == everything["total_estimated"]
    assert set(pages) == {r["uri"] for r in everything["results"]}
    assert pages[:6] == [r["uri"] for r in reference["results"]][:6]


@pytest.mark.parametrize(
    ("source", "filters", "check"),
    [
        ("notes", {"keywords": ["journal"]}, lambda r: "journal" in [t.lower() for t in r["tags"]]),
        ("media", {"media_types": ["email"]}, lambda r: r["media_type"] == "email"),
        ("chats", {"by": "message", "sender": "user"}, lambda r: r["role"] == "user"),
        ("prompts", {"fields": ["system_prompt"]}, lambda r: r["loc"]["field"] == "system_prompt"),
    ],
)
async def test_filters_apply_per_source(
    connect: Callable[..., Client], source: str, filters: dict[str, Any], check: Callable[[Any], bool]
) -> None:
    async with connect() as client:
        out = await search(client, query="the", filters={source: filters}, seen="show", limit=100)
    mine = [r for r in out["results"] if source_of(r) == source]
    assert mine and all(check(r) for r in mine)
    assert {source_of(r) for r in out["results"]} - {source}, "the other sources still answer"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"filters": {"media": {"media_typez": ["email"]}}}, "filters.media.media_typez"),
        ({"filters": {"videos": {}}}, "filters.videos"),
        ({"filters": {"media": {"date_from": "June"}}}, "date_from"),
        ({"sources": ["videos"]}, "sources"),
        ({"limit": 101}, "limit"),
        ({"min_score": 1.5}, "min_score"),
        ({"seen": "forget"}, "seen"),
    ],
)
async def test_bad_arguments_are_tool_errors_naming_the_field(
    connect: Callable[..., Client], args: dict[str, Any], field: str
) -> None:
    async with connect() as client:
        result = await client.call_tool("knowledge_search", {"query": "meeting", **args})
        assert result.is_error
        assert field in result.content[0].text  # type: ignore[union-attr]
        assert not (await client.call_tool("knowledge_search", {"query": "meeting"})).is_error


async def test_min_score_drops_weak_results_and_warns_when_none_reach_it(
    connect: Callable[..., Client],
) -> None:
    async with connect() as client:
        loose = await search(client, query="postgres migration", seen="show")
        cut = loose["results"][0]["score"] - ROUNDING  # at most the top's own score
        strict = await search(client, query="postgres migration", seen="show", min_score=cut)
        none = await search(client, query="postgres migration", seen="show", min_score=1.0)
    assert strict["results"] and all(r["score"] >= cut - ROUNDING for r in strict["results"])
    assert len(strict["results"]) < len(loose["results"])
    assert none["results"] == [] and any("min_score" in w for w in none["warnings"])


async def test_a_broken_source_becomes_a_warning_and_the_others_still_answer(
    data_dir: Path, client_factory: Any
) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    await import_into(data_dir, "prompts", FIXTURES / "prompts")
    conn = sqlite3.connect(database_path(data_dir, "local", "prompts"))
    conn.execute("DROP TABLE prompts_chunks_fts")
    conn.commit()
    conn.close()
    async with client_factory() as client:  # lexical: the notes' missing vectors would be a hint too
        out = await search(client, query="meeting", seen="show", mode="lexical")
    assert out["degraded"] is True and out["provider_hint"] == "prompts"
    assert any(w.startswith("prompts:") for w in out["warnings"])
    assert out["results"] and {source_of(r) for r in out["results"]} == {"notes"}


async def test_a_slow_source_is_cut_off_at_the_time_limit(
    connect: Callable[..., Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = SOURCES["chats"].search

    async def slow(self: ChunkedSource[Any], *args: Any) -> Any:
        if self.name == "chats":
            await anyio.sleep(30)
        return await original(*args)

    monkeypatch.setattr(type(SOURCES["chats"]), "search", slow)
    # 2 s: the others answer in milliseconds, but a loaded CI machine must not cut them off too
    async with connect(source_timeout_s=2) as client:
        out = await search(client, query="meeting", seen="show", mode="lexical")
    assert out["degraded"] is True and out["provider_hint"] == "chats"
    assert any("within 2 s" in w for w in out["warnings"]) and out["results"]


async def test_dotted_tool_names_publish_knowledge_dot_search(connect: Callable[..., Client]) -> None:
    async with connect(tool_names="dotted") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        out = structured(await client.call_tool("knowledge.search", {"query": "meeting"}))
    assert {"knowledge.search", "knowledge.get"} <= names and "knowledge_search" not in names
    assert out["results"]


async def test_a_repeated_search_hiding_seen_items_brings_new_items(connect: Callable[..., Client]) -> None:
    async with connect() as client:
        first = await search(client, query="the", limit=5, session_id="s-repeat", seen="hide")
        second = await search(client, query="the", limit=5, session_id="s-repeat", seen="hide")
        fresh = await search(client, query="the", limit=5, session_id="s-other", seen="hide")
        info = structured(await client.call_tool("session_info", {"session_id": "s-repeat"}))
    a, b = [r["uri"] for r in first["results"]], [r["uri"] for r in second["results"]]
    assert first["session_applied"] and len(a) == len(b) == 5 and not set(a) & set(b)
    assert [r["uri"] for r in fresh["results"]] == a
    assert set(a + b) <= set(info["seen"])


async def test_downrank_halves_seen_scores_and_show_ignores_the_session(
    connect: Callable[..., Client],
) -> None:
    async with connect() as client:
        first = await search(client, query="migration", limit=1, session_id="s-rank")
        top = first["results"][0]
        down = await search(client, query="migration", seen="downrank", limit=100, session_id="s-rank")
        shown = await search(client, query="migration", seen="show", limit=1, session_id="s-rank")
    again = next(r for r in down["results"] if r["uri"] == top["uri"])
    # both scores are rounded to three digits
    assert again["score"] == pytest.approx(top["score"] * 0.5, abs=1.5 * ROUNDING)
    assert again["score"] < top["score"]
    scores = [r["score"] for r in down["results"]]
    assert scores == sorted(scores, reverse=True)
    assert shown["results"][0]["uri"] == top["uri"]


async def test_when_everything_was_seen_hide_shows_it_again_and_says_so(
    connect: Callable[..., Client],
) -> None:
    async with connect() as client:
        first = await search(client, query="postgres", limit=100, session_id="s-exhaust", seen="hide")
        again = await search(client, query="postgres", limit=100, session_id="s-exhaust", seen="hide")
    assert [r["uri"] for r in again["results"]] == [r["uri"] for r in first["results"]]
    assert any("already returned" in w for w in again["warnings"])


async def test_a_hidden_item_is_named_in_seen_applied(connect: Callable[..., Client]) -> None:
    async with connect() as client:
        first = await search(client, query="meeting", limit=3, session_id="s-applied")
        again = await search(client, query="meeting", limit=3, session_id="s-applied", seen="hide")
    shown = [r["uri"] for r in first["results"]]
    assert "seen_applied" not in first  # nothing was seen yet: the field is left out
    assert again["seen_applied"] == {"mode": "hide", "count": 3, "uris": shown}
    assert not set(shown) & {r["uri"] for r in again["results"]}


async def test_seen_items_are_down_ranked_by_default_and_named(connect: Callable[..., Client]) -> None:
    async with connect() as client:
        first = await search(client, query="meeting agenda", limit=1, session_id="s-default")
        again = await search(client, query="meeting agenda", limit=5, session_id="s-default")
    top = first["results"][0]
    assert again["seen_applied"]["mode"] == "downrank" and top["uri"] in again["seen_applied"]["uris"]
    assert again["seen_applied"]["count"] == len(again["seen_applied"]["uris"]) == 1
    halved = [r for r in again["results"] if r["uri"] == top["uri"]]
    # scores have 3 digits on the wire
    assert not halved or halved[0]["score"] == pytest.approx(top["score"] * 0.5, abs=1e-3)
