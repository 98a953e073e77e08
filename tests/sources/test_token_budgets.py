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
from tests.budgets import held_budget, sent_tokens, within_budget
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
                    assert got["meta"]["uri"] == f"{source}://{item_id}"
                    if held_budget(got, max_tokens) == max_tokens:  # raised only when nothing else fits
                        continue
                    assert max_tokens == 50 and got["content"], (item_id, mode)


def joined(pages: list[dict[str, Any]]) -> str:
    return "".join(page["content"] for page in pages)


async def read_on(client: Any, tool: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Every page of a read that starts with `args`, following `next` (which keeps the budget,
    or the one it was raised to), each within its budget."""
    pages: list[dict[str, Any]] = []
    step = dict(args)
    for _ in range(400):
        got = within_budget(await client.call_tool(tool, step), step["retrieval"]["max_tokens"])
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
