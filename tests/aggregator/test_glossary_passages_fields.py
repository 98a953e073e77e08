"""Glossary expansion, passages per item and fields, through a real MCP client: in memory, and
the BP case through `serve` over stdio (a real process reading the glossary the CLI wrote)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from knowledge_mcp.server.cli.glossary import glossary_path, run_glossary
from tests.conftest import FIXTURES, ROOT, call, import_into, serve_args

pytestmark = pytest.mark.anyio

BP_NOTE = ROOT / "tests" / "sources" / "search" / "glossary_notes" / "blood-pressure.md"
FIELD_GUIDE = "Field guide to North European birds (working notes)"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Notes (the long field guide among them, and a note that says "blood pressure", never
    "BP") and media, with the glossary entry BP → blood pressure written by the CLI."""
    data = tmp_path_factory.mktemp("glossary") / "data"
    await import_into(data, "notes", FIXTURES / "notes", BP_NOTE)
    await import_into(data, "media", FIXTURES / "media")
    assert (
        run_glossary(data, "local", "add", "BP", ["blood pressure", "hypertension", "arterial tension"]) == 0
    )
    return data


def uris(page: dict[str, Any]) -> list[str]:
    return [r["uri"] for r in page["results"]]


async def search(client: Client, **args: Any) -> dict[str, Any]:
    return await call(client, "knowledge_search", **{"seen": "show", **args})


async def test_over_stdio_a_search_for_bp_finds_the_note_that_only_says_blood_pressure(
    data_dir: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWLEDGE_MCP_")}
    params = StdioServerParameters(command=sys.executable, args=serve_args(data_dir), env=env, cwd=str(ROOT))
    async with Client(params) as client:
        expanded = await search(client, query="BP")
        plain = await search(client, query="BP", expand=False)
        source_tool = await call(client, "notes_search", query="BP")
    titles = [r["title"] for r in expanded["results"]]
    assert "Checking blood pressure at home" in titles
    assert expanded["expanded_terms"] == ["BP → blood pressure, hypertension"]
    hit = next(r for r in expanded["results"] if r["title"] == "Checking blood pressure at home")
    assert hit["matched_terms"] == ["blood pressure"]
    assert "Checking blood pressure at home" not in [r["title"] for r in plain["results"]]
    assert "expanded_terms" not in plain
    assert "Checking blood pressure at home" in [r["title"] for r in source_tool["results"]]
    assert source_tool["expanded_terms"] == expanded["expanded_terms"]


async def test_the_servers_glossary_expands_under_the_users_own(
    client_factory: Callable[..., Client], tmp_path: Path
) -> None:
    server_glossary = tmp_path / "server-glossary.yaml"
    server_glossary.write_text("heron: [egret]\nBP: [boiling point]\n", encoding="utf-8")
    async with client_factory(glossary_file=server_glossary) as client:
        page = await search(client, query="BP heron")
    assert page["expanded_terms"] == ["BP → blood pressure, hypertension", "heron → egret"]


ODD = [
    ("not YAML", "BP: [blood pressure\n  - : :", "not valid YAML"),
    ("not a mapping", "- BP\n- blood pressure\n", "not a mapping"),
    ("empty synonyms", "BP: []\nx: ''\n", "left out"),
    ("operators and quotes", 'BP: [\'"blood" NEAR(pressure\', "AND OR NOT *", "col:umn"]\n', None),
    ("huge entries", "BP: [" + ", ".join(f"w{n} " * 9 for n in range(2000)) + "]\n", "left out"),
]


@pytest.mark.parametrize(("shows", "text", "warned"), ODD, ids=[c[0] for c in ODD])
async def test_an_odd_server_glossary_never_fails_a_search(
    client_factory: Callable[..., Client], tmp_path: Path, shows: str, text: str, warned: str | None
) -> None:
    odd = tmp_path / "odd.yaml"
    odd.write_text(text, encoding="utf-8")
    async with client_factory(glossary_file=odd) as client:
        page = await search(client, query="BP")
        notes = await call(client, "notes_search", query="BP")
    assert "Checking blood pressure at home" in [
        r["title"] for r in page["results"]
    ]  # the user's own applies
    said = [w for w in page.get("warnings", []) if "server glossary" in w]
    assert (warned is None and not said) or (warned is not None and warned in said[0])
    assert said == [w for w in notes.get("warnings", []) if "server glossary" in w]


def field_guide_hits(page: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in page["results"] if r["title"] == FIELD_GUIDE]


async def test_per_item_two_returns_two_sections_of_one_long_document(
    client_factory: Callable[..., Client],
) -> None:
    async with client_factory() as client:
        one = await search(client, query="heron", sources=["notes"])
        two = await search(client, query="heron", sources=["notes"], per_item=2)
        by_tool = await call(client, "notes_search", query="heron")
    assert len(field_guide_hits(one)) == 1 and len(field_guide_hits(by_tool)) == 1
    sections = field_guide_hits(two)
    assert len(sections) == 2
    assert sections[0]["loc"] != sections[1]["loc"] and sections[0]["snippet"] != sections[1]["snippet"]
    assert sections[0]["score"] >= sections[1]["score"]
    assert uris(two)[0] == uris(one)[0]  # the top hit stays on top


def passages(page: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["uri"], str(r["loc"])) for r in page["results"]]


async def test_pages_of_passages_never_overlap_or_skip(client_factory: Callable[..., Client]) -> None:
    query = {"query": "heron OR swan OR goose", "sources": ["notes"], "per_item": 3}
    async with client_factory() as client:
        first = await search(client, **query, limit=2)
        second = await search(client, **query, limit=2, offset=first["next_offset"])
        whole = await search(client, **query, limit=4)
    assert first["next_offset"] == 2
    assert not set(passages(first)) & set(passages(second))
    assert passages(whole) == passages(first) + passages(second)
    assert len(set(uris(whole))) < len(uris(whole))  # an item's passages take several places


async def test_per_item_is_bounded_and_named_in_the_error(client_factory: Callable[..., Client]) -> None:
    async with client_factory() as client:
        result = await client.call_tool("knowledge_search", {"query": "heron", "per_item": 6})
    assert result.is_error and "per_item" in result.content[0].text  # type: ignore[union-attr]


FIELDS = [
    ("content", "notes", "heron"),
    ("headings", "notes", "heron"),
    ("reason", "notes", "heron"),
    ("summary", "media", "solar"),
]


@pytest.mark.parametrize(("field", "source", "query"), FIELDS)
async def test_a_field_adds_what_it_says_and_nothing_else(
    client_factory: Callable[..., Client], field: str, source: str, query: str
) -> None:
    async with client_factory() as client:
        plain = await search(client, query=query, sources=[source])
        more = await search(client, query=query, sources=[source], fields=[field])
    assert uris(plain) == uris(more)
    for before, after in zip(plain["results"], more["results"], strict=True):
        added = set(after) - set(before)
        assert added <= {field} and set(before) <= set(after)
        assert {k: v for k, v in after.items() if k != field} == before
    assert any(field in r for r in more["results"])


async def test_content_is_the_hit_chunks_full_text_and_reason_says_why(
    client_factory: Callable[..., Client],
) -> None:
    async with client_factory() as client:
        page = await search(client, query="BP", sources=["notes"], fields=["content", "reason"])
    hit = next(r for r in page["results"] if r["title"] == "Checking blood pressure at home")
    assert "Sit quietly for five minutes" in hit["content"] and len(hit["content"]) > len(hit["snippet"])
    assert hit["reason"] == "title and body match 'blood pressure' (for 'BP')"


async def test_defaults_stay_compact(client_factory: Callable[..., Client]) -> None:
    async with client_factory() as client:
        page = await search(client, query="heron")
    for hit in page["results"]:
        assert not {"content", "reason", "headings", "summary"} & set(hit)


async def test_a_result_down_ranked_as_seen_keeps_its_snippet(client_factory: Callable[..., Client]) -> None:
    async with client_factory() as client:
        first = await call(client, "knowledge_search", query="heron", session_id="gx-seen")
        again = await call(client, "knowledge_search", query="heron", session_id="gx-seen", fields=["reason"])
    assert again["seen_applied"]["count"] >= 1
    for hit in again["results"]:
        assert hit["snippet"] and hit["matched_terms"] and hit["reason"]
    assert [r["snippet"] for r in again["results"]] == [r["snippet"] for r in first["results"]]


def test_the_glossary_command_adds_lists_and_removes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    assert run_glossary(data, "alice", "add", "BP", ["blood pressure"]) == 0
    assert run_glossary(data, "alice", "add", "bp", ["hypertension", "blood pressure"]) == 0
    assert run_glossary(data, "alice", "list", None, []) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "BP: blood pressure, hypertension"
    assert glossary_path(data, "alice").is_file() and not glossary_path(data, "local").exists()
    assert run_glossary(data, "alice", "remove", "bp", []) == 0
    run_glossary(data, "alice", "list", None, [])
    assert capsys.readouterr().out == "removed BP\n"
