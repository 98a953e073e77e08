"""max_tokens holds in real cl100k tokens for both renderings of every get, through the real
tools, on text whose tokens are far from characters / 4: code, Chinese, Japanese, Russian,
Arabic, emoji, real chat exports, emails and transcripts."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.db import database_path, open_database
from tests.budgets import TOO_SMALL, needed_budget, sent_tokens, within_budget
from tests.conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio

DATA = Path(__file__).parent / "data"
TEXTS = [DATA / "tokens", DATA / "encodings" / "chinese-big5.txt"]
# source → (what to import, the get tool's id argument)
WORLD: dict[str, tuple[list[Path], str]] = {
    "notes": (TEXTS, "note_id"),
    "media": ([*TEXTS, FIXTURES / "media"], "media_id"),
    "chats": ([FIXTURES / "chats"], "conversation_id"),
    "characters": ([FIXTURES / "characters"], "character_id"),
    "prompts": ([FIXTURES / "prompts"], "prompt_id_or_name"),
}
MODES = ["snippet", "chunk", "chunk_with_siblings", "full"]
BUDGETS = [50, 300, 1000]


async def item_ids(data_dir: Path, source: str) -> list[str]:
    db = await open_database(database_path(data_dir, "local", source), get_source(source).migrations)
    try:
        return [row[0] for row in await db.fetchall(f"SELECT item_id FROM {source}_items ORDER BY item_id")]
    finally:
        await db.close()


@pytest.fixture
async def world(request: Any, data_dir: Path, client_factory: Any) -> Any:
    source = request.param
    paths, _ = WORLD[source]
    await import_into(data_dir, source, *paths)
    async with client_factory(rate_limit_per_minute=0) as client:
        yield source, await item_ids(data_dir, source), client


@pytest.mark.parametrize("world", list(WORLD), indirect=True)
async def test_both_renderings_stay_within_max_tokens_in_every_mode(world: Any) -> None:
    source, ids, client = world
    id_arg = WORLD[source][1]
    assert len(ids) >= 4
    for item_id in ids:
        for mode in MODES:
            for max_tokens in BUDGETS:
                retrieval = {"mode": mode, "max_tokens": max_tokens}
                own = await client.call_tool(f"{source}_get", {id_arg: item_id, "retrieval": retrieval})
                routed = await client.call_tool(
                    "knowledge_get", {"uri": f"{source}://{item_id}", "retrieval": retrieval}
                )
                for result in (own, routed):
                    got = within_budget(result, max_tokens)
                    needed = needed_budget(got, max_tokens)
                    assert "refused" in got or got["meta"]["uri"] == f"{source}://{item_id}"
                    if needed is None:
                        continue
                    assert max_tokens == 50, (item_id, mode)  # the handle alone only when nothing fits
                    retry = {"mode": mode, "max_tokens": needed}
                    again = await client.call_tool(f"{source}_get", {id_arg: item_id, "retrieval": retry})
                    assert within_budget(again, needed)["content"], (item_id, mode, needed)


def joined(pages: list[dict[str, Any]]) -> str:
    return "".join(page["content"] for page in pages)


async def read_on(client: Any, tool: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Every page of a read that starts with `args`, following `next` (which keeps the budget),
    each within its budget; a handle-only page is asked again with the budget it names."""
    pages: list[dict[str, Any]] = []
    step = dict(args)
    for _ in range(400):
        got = within_budget(await client.call_tool(tool, step), step["retrieval"]["max_tokens"])
        needed = needed_budget(got, step["retrieval"]["max_tokens"])
        if needed is not None:
            step = {**step, "retrieval": {**step["retrieval"], "max_tokens": needed}}
            continue
        pages.append(got)
        if got["next"] is None:
            return pages
        step = {**args, "loc": got["next"]["loc"], "retrieval": got["next"]["retrieval"]}
    raise AssertionError("reading never ended")


@pytest.mark.parametrize("world", ["notes", "media"], indirect=True)
@pytest.mark.parametrize("max_tokens", [50, 300])
async def test_following_next_through_full_mode_reads_the_whole_item_once(
    world: Any, max_tokens: int
) -> None:
    source, ids, client = world
    for item_id in ids:
        args = {"uri": f"{source}://{item_id}"}
        whole = await client.call_tool(
            "knowledge_get", {**args, "retrieval": {"mode": "full", "max_tokens": 32000}}
        )
        text = whole.structured_content["content"]
        pages = await read_on(
            client, "knowledge_get", {**args, "retrieval": {"mode": "full", "max_tokens": max_tokens}}
        )
        assert joined(pages) == text, item_id
        assert all(page["content"] for page in pages)


@pytest.mark.parametrize("world", ["chats"], indirect=True)
async def test_following_next_through_a_chat_reads_every_message_whole_and_once(world: Any) -> None:
    _, ids, client = world
    for cid in ids:
        whole = (
            await client.call_tool(
                "chats_get", {"conversation_id": cid, "page_size": 200, "retrieval": {"max_tokens": 32000}}
            )
        ).structured_content
        texts = {m["message_index"]: m["text"] for m in whole["content"]}
        pages = await read_on(
            client, "chats_get", {"conversation_id": cid, "retrieval": {"mode": "full", "max_tokens": 300}}
        )
        pieces: dict[int, str] = defaultdict(str)
        order: list[int] = []
        for page in pages:
            for m in page["content"]:
                pieces[m["message_index"]] += m["text"]
                order += [] if order[-1:] == [m["message_index"]] else [m["message_index"]]
        assert order == sorted(texts) and dict(pieces) == texts, cid


@pytest.mark.parametrize("world", ["chats"], indirect=True)
async def test_a_chat_read_around_a_message_fills_the_budget(world: Any) -> None:
    """The window grows by whole messages and then by the part of the next one that fits: a
    conversation with more text than the budget comes back close to it, not at a fraction (short
    only by at most one message's own fields, ~70 tokens with a uuid id and a timestamp)."""
    _, ids, client = world
    filled = []
    for cid in ids:
        whole = await client.call_tool(
            "chats_get", {"conversation_id": cid, "retrieval": {"max_tokens": 32000}}
        )
        if sent_tokens(whole) < 600:
            continue
        args = {
            "conversation_id": cid,
            "loc": {"message_index": 0},
            "retrieval": {"mode": "chunk_with_siblings", "max_tokens": 300, "sibling_window": 20},
        }
        result = await client.call_tool("chats_get", args)
        within_budget(result, 300)
        filled.append(sent_tokens(result))
    # most reads end within one message's fields of the budget; some land exactly on it
    assert len(filled) >= 4 and min(filled) >= 225 and sum(filled) / len(filled) >= 260, filled


@pytest.mark.parametrize("world", ["notes"], indirect=True)
async def test_chars_per_token_counts_characters_of_both_renderings(world: Any) -> None:
    _, ids, client = world
    for item_id in ids:
        retrieval = {"mode": "full", "max_tokens": 300, "chars_per_token": 3}
        result = await client.call_tool("notes_get", {"note_id": item_id, "retrieval": retrieval})
        got = result.structured_content
        structured = json.dumps(got, separators=(",", ":"), ensure_ascii=False)
        chars = max(math.ceil(len(structured) / 3), math.ceil(len(result.content[0].text) / 3))
        assert got["tokenizer"] == "chars" and got["estimated_tokens"] == chars <= 300


def sent_chars_tokens(result: Any, chars_per_token: int) -> int:
    """The larger rendering counted as the caller asked: characters / `chars_per_token`."""
    structured = json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
    return max(math.ceil(len(text) / chars_per_token) for text in (structured, result.content[0].text))


@pytest.mark.parametrize("world", list(WORLD), indirect=True)
@pytest.mark.parametrize("chars_per_token", [None, 2])
async def test_a_small_budget_is_a_ceiling_and_the_handle_names_a_budget_that_reads(
    world: Any, chars_per_token: int | None
) -> None:
    """Budgets too small for content (120 for a chat, 100 at two characters a token) are never
    exceeded: the answer is the handle and the budget that would return content."""
    source, ids, client = world
    id_arg = WORLD[source][1]
    handles = 0
    for item_id in ids:
        for max_tokens in (50, 100, 120):
            retrieval: dict[str, Any] = {"mode": "chunk_with_siblings", "max_tokens": max_tokens}
            if chars_per_token is not None:
                retrieval["chars_per_token"] = chars_per_token
            result = await client.call_tool(f"{source}_get", {id_arg: item_id, "retrieval": retrieval})
            if chars_per_token is None:
                got = within_budget(result, max_tokens)
            else:
                got = result.structured_content or {"refused": TOO_SMALL.search(result.content[0].text)[2]}
                assert sent_chars_tokens(result, 2) <= max_tokens, (item_id, max_tokens, got)
            needed = needed_budget(got, max_tokens)
            if needed is None:
                assert got["content"], (item_id, max_tokens)
                continue
            handles += 1
            assert "refused" in got or got["truncated"] is True
            retry = {**retrieval, "max_tokens": needed}
            again = await client.call_tool(f"{source}_get", {id_arg: item_id, "retrieval": retry})
            assert again.structured_content["content"], (item_id, needed)
            assert again.structured_content["estimated_tokens"] <= needed
    assert chars_per_token is None or handles > 0  # two characters a token leaves 50 no room
