"""Importing chats: every format, branch flattening, chosen swipes, idempotent re-import, prune."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.chats import source
from knowledge_mcp.sources.chats.sillytavern import parse_send_date
from knowledge_mcp.sources.storage.db import database_path, open_database
from tests.conftest import FIXTURES, call, import_into

pytestmark = pytest.mark.anyio

CHATS = FIXTURES / "chats"
CHATGPT = CHATS / "chatgpt" / "conversations.json"
CLAUDE = CHATS / "claude" / "conversations.json"
TAVERN = CHATS / "sillytavern" / "Captain Mirelle - 2025-06-01@14h22m10s.jsonl"
PLAIN = CHATS / "plain" / "research-chat.json"


_TEXT = {"type": "text", "text": "Take the ferry.", "citations": []}


def parse(path: Path) -> list[Any]:
    return source.parse_file(path, path.read_bytes())


def messages(item: Any) -> list[tuple[dict[str, Any], str]]:
    return [(c.meta, item.content[c.start : c.end]) for c in item.chunks]


def test_chatgpt_export_is_one_item_per_conversation_with_its_title_and_epoch_dates() -> None:
    items = {i.title: i for i in parse(CHATGPT)}
    assert set(items) == {
        "Find duplicate photos by hash",
        "Names for orange sourdough loaf",
        "Letter to landlord about boiler",
    }
    loaf = items["Names for orange sourdough loaf"]
    assert loaf.key == "88bd6407-2bcf-4e01-a28d-efe39bf00273"
    assert loaf.meta["format"] == "chatgpt"
    assert loaf.created_at == "2025-05-29T07:10:40+00:00"  # the first message, not the conversation
    assert loaf.last_modified == "2025-05-29T07:13:02+00:00"


def test_chatgpt_follows_the_branch_ending_at_current_node_and_drops_abandoned_regenerations() -> None:
    loaf = next(i for i in parse(CHATGPT) if i.title.startswith("Names for orange"))
    texts = [text for _, text in messages(loaf)]
    assert "Night Grove" in texts[1]
    assert "marmalade" not in loaf.content.lower() and "seville" not in loaf.content.lower()
    # the hidden empty system node is skipped; roles alternate from the user's first message
    assert [m["role"] for m, _ in messages(loaf)] == ["user", "assistant"] * 3
    assert messages(loaf)[-1][0]["message_id"] == "aefcfad8-efc8-4849-b3aa-7efe4458a885"


def test_each_message_is_one_chunk_whose_span_is_exactly_its_text() -> None:
    photos = next(i for i in parse(CHATGPT) if i.title.startswith("Find duplicate"))
    (first_meta, first), (second_meta, second) = messages(photos)[:2]
    assert first.startswith("I have about 40,000 photos") and first.endswith("just list them.")
    assert "```python\nimport hashlib" in second  # the code block is kept verbatim
    assert photos.content.startswith("user: I have about 40,000 photos")
    assert "\n\nassistant: Sure." in photos.content
    assert set(first_meta) == {"message_id", "message_index", "role", "sender", "timestamp"}
    assert second_meta["message_index"] == 1 and second_meta["sender"] == "assistant"


def test_claude_export_maps_human_to_user_and_keeps_the_regex_code_block() -> None:
    items = {i.title: i for i in parse(CLAUDE)}
    assert set(items) == {
        "UK postcode validation regex",
        "Three days on Islay",
        "Feedback on cover letter opening",
    }
    regex = items["UK postcode validation regex"]
    assert regex.key == "366c5acd-aeaf-4905-9c8a-c0bb635b4c41"
    assert [m["role"] for m, _ in messages(regex)] == ["user", "assistant", "user", "assistant", "assistant"]
    assert "const UK_POSTCODE = /^(GIR 0AA|" in messages(regex)[1][1]
    assert messages(regex)[0][0]["message_id"] == "162a01de-c287-43f8-a21c-4e003f9931ee"
    assert regex.created_at == "2025-04-22T15:04:34+00:00"
    assert regex.last_modified == "2025-04-22T15:07:34+00:00"


def test_claude_thinking_is_its_own_marked_message_before_the_answer_it_led_to() -> None:
    regex = next(i for i in parse(CLAUDE) if i.title == "UK postcode validation regex")
    (thought_meta, thought), (answer_meta, answer) = messages(regex)[3:]
    assert thought.startswith("The user asks whether the regex handles BFPO addresses.")
    assert "BF1 postcode district" in thought and "BF1 postcode district" not in answer
    assert (thought_meta["role"], thought_meta["sender"]) == ("assistant", "assistant (thinking)")
    assert (answer_meta["role"], answer_meta["sender"]) == ("assistant", "assistant")
    assert answer.startswith("No. British Forces Post Office addresses")
    assert answer_meta["message_id"] == "d283eb3a-5fbd-438e-89cf-158de6e96d45"
    assert thought_meta["message_id"] == answer_meta["message_id"] + "#thinking-1"
    assert thought_meta["timestamp"] == "2025-04-22T15:07:31+00:00"
    assert regex.content.count("assistant (thinking): ") == 1


@pytest.mark.parametrize(
    "parts, expected",
    [
        (
            [{"type": "thinking", "thinking": "", "summaries": [{"summary": "Weighed two routes."}]}, _TEXT],
            [("assistant (thinking)", "Weighed two routes."), ("assistant", "Take the ferry.")],
        ),
        (
            [{"type": "thinking", "thinking": "  ", "summaries": []}, _TEXT],
            [("assistant", "Take the ferry.")],
        ),
        (
            [_TEXT, {"type": "tool_use", "name": "web_search", "input": {"q": "ferry"}}],
            [("assistant", "Take the ferry.")],
        ),
        (
            [{"type": "thinking", "thinking": "First."}, _TEXT, {"type": "thinking", "thinking": "Then."}],
            [
                ("assistant (thinking)", "First."),
                ("assistant", "Take the ferry."),
                ("assistant (thinking)", "Then."),
            ],
        ),
    ],
)
def test_claude_thinking_parts_keep_their_place_and_empty_ones_are_dropped(
    tmp_path: Path, parts: list[Any], expected: list[tuple[str, str]]
) -> None:
    message = {"uuid": "m1", "sender": "assistant", "text": "Take the ferry.", "content": parts}
    question = {"uuid": "m0", "sender": "human", "text": "", "content": [{"type": "text", "text": "How?"}]}
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([{"uuid": "c", "name": "Islay", "chat_messages": [question, message]}]))
    (chat,) = parse(path)
    assert [(m["sender"], text) for m, text in messages(chat)][1:] == expected


def test_sillytavern_indexes_the_chosen_swipe_with_display_names_and_character() -> None:
    (chat,) = parse(TAVERN)
    assert chat.title == "Captain Mirelle - 2025-06-01@14h22m10s"
    assert chat.meta["character_name"] == "Captain Mirelle"
    assert chat.meta["user_name"] == "Alex"
    assert "narwhal" not in chat.content.lower()
    assert "Widow's Reef" not in chat.content  # the other swipe of the first message
    first, second = messages(chat)[:2]
    assert (first[0]["sender"], first[0]["role"]) == ("Captain Mirelle", "assistant")
    assert (second[0]["sender"], second[0]["role"]) == ("Alex", "user")
    assert second[0]["timestamp"] == "2025-06-01T14:24:00+00:00"
    assert chat.created_at == "2025-06-01T14:22:00+00:00"
    assert chat.last_modified == "2025-06-01T14:35:00+00:00"
    assert len(chat.chunks) == 11


@pytest.mark.parametrize(
    "value, expected",
    [
        ("June 1, 2025 2:24pm", "2025-06-01T14:24:00+00:00"),
        ("December 31, 2024 11:05 AM", "2024-12-31T11:05:00+00:00"),
        ("2025-06-01@14h22m10s", "2025-06-01T14:22:10+00:00"),
        (1748787850000, "2025-06-01T14:24:10+00:00"),
        ("2025-06-01T12:24:31.118Z", "2025-06-01T12:24:31+00:00"),
        ("sometime", None),
    ],
)
def test_sillytavern_send_dates_in_every_known_shape(value: Any, expected: str | None) -> None:
    assert parse_send_date(value) == expected


def test_sillytavern_message_without_a_date_falls_back_to_the_file_mtime(tmp_path: Path) -> None:
    path = tmp_path / "Nova - chat.jsonl"
    path.write_text(
        '{"user_name": "Alex", "character_name": "Nova"}\n'
        '{"name": "Nova", "is_user": false, "mes": "Hello there."}\n'
    )
    (chat,) = parse(path)
    assert chat.created_at == chat.last_modified and chat.created_at.endswith("+00:00")
    assert messages(chat)[0][0]["timestamp"] is None


def test_plain_format_keeps_senders_roles_and_timestamps() -> None:
    (chat,) = parse(PLAIN)
    assert chat.title == "Heat pump sizing for a 1930s semi"
    assert chat.meta["format"] == "plain"
    metas = [m for m, _ in messages(chat)]
    assert [m["role"] for m in metas][:3] == ["system", "user", "assistant"]
    assert [m["sender"] for m in metas][:3] == ["system", "Sam Okafor", "Research assistant"]
    assert chat.created_at == "2025-03-08T19:14:02+00:00"
    assert chat.last_modified == "2025-03-08T19:26:20+00:00"


def test_plain_list_gives_one_item_per_conversation_and_untitled_ones_a_title(tmp_path: Path) -> None:
    path = tmp_path / "two.json"
    path.write_text(
        json.dumps(
            [
                {"id": "a", "messages": [{"role": "human", "content": "How long do I boil an egg?"}]},
                {
                    "title": "Second",
                    "messages": [{"role": "bot", "content": [{"type": "text", "text": "Hi"}]}],
                },
            ]
        )
    )
    first, second = parse(path)
    assert (first.key, first.title) == ("a", "How long do I boil an egg?")
    assert (second.key, second.title) == ("#1", "Second")
    assert messages(second)[0][0]["role"] == "assistant"


@pytest.mark.parametrize(
    "text, reason",
    [
        ('{"title": "x", "messages": [{"role": "wizard", "content": "hi"}]}', "unknown role"),
        ('{"title": "x"}', "not a recognised chat format"),
        ("[1, 2]", "expected an object"),
        (
            '{"user_name": "A", "character_name": "B"}\n{"mes": "hi", "is_user": true\n',
            "line 2: invalid JSON",
        ),
    ],
)
def test_malformed_files_raise_a_clear_reason(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / ("bad.jsonl" if "\n" in text else "bad.json")
    path.write_text(text)
    with pytest.raises(ValueError, match=reason):
        parse(path)


async def test_fixture_folder_imports_and_the_broken_file_is_reported(data_dir: Path) -> None:
    summary = await import_into(data_dir, "chats", CHATS, FIXTURES / "broken" / "chats")
    assert summary.added == 3 + 3 + 1 + 1
    assert summary.files_failed == 1
    (failure,) = summary.failures
    assert failure["path"].endswith("invalid.json") and failure["reason"].startswith("not valid JSON: ")


async def test_reimport_of_the_fixture_folder_changes_nothing(data_dir: Path) -> None:
    await import_into(data_dir, "chats", CHATS)
    again = await import_into(data_dir, "chats", CHATS)
    assert (again.added, again.updated, again.unchanged, again.files_failed) == (0, 0, 8, 0)


async def test_changed_export_updates_only_the_changed_conversation(data_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "export"
    shutil.copytree(CHATS / "claude", folder)
    await import_into(data_dir, "chats", folder)
    path = folder / "conversations.json"
    data = json.loads(path.read_text())
    data[1]["name"] = "Four days on Islay"
    path.write_text(json.dumps(data))
    summary = await import_into(data_dir, "chats", folder)
    assert (summary.added, summary.updated, summary.unchanged) == (0, 1, 2)


async def test_prune_removes_the_conversations_of_a_deleted_file(data_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "chats"
    shutil.copytree(CHATS, folder)
    await import_into(data_dir, "chats", folder)
    (folder / "chatgpt" / "conversations.json").unlink()
    summary = await import_into(data_dir, "chats", folder, prune=True)
    assert summary.pruned == 3
    db = await open_database(database_path(data_dir, "local", "chats"), source.migrations)
    try:
        rows = await db.fetchall("SELECT json_extract(meta, '$.format') AS f FROM chats_items")
        chunks = await db.fetchone("SELECT COUNT(*) FROM chats_chunks")
    finally:
        await db.close()
    assert sorted(r["f"] for r in rows) == ["claude"] * 3 + ["plain", "sillytavern"]
    assert chunks is not None and chunks[0] == 4 * 3 + 1 + 7 + 11  # + one Claude thinking block


def test_chatgpt_multimodal_parts_keep_text_and_voice_transcripts_and_skip_tool_calls(tmp_path: Path) -> None:
    def node(nid: str, parent: str | None, role: str, parts: list[Any], **extra: Any) -> dict[str, Any]:
        content = {"content_type": extra.pop("content_type", "multimodal_text"), "parts": parts}
        message = {"id": nid, "author": {"role": role}, "content": content, "create_time": 1.7e9, **extra}
        return {"id": nid, "parent": parent, "children": [], "message": message}

    mapping = {
        "a": node("a", None, "user", [{"asset_pointer": "file-1"}, "What is in this photo?"]),
        "b": node("b", "a", "assistant", ["print(1)"], content_type="code", recipient="python"),
        "c": node("c", "b", "tool", ["1"], content_type="execution_output"),
        "d": node("d", "c", "assistant", [{"content_type": "audio_transcription", "text": "A heron."}]),
    }
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([{"id": "x", "title": "Photo", "mapping": mapping, "current_node": "d"}]))
    (chat,) = parse(path)
    assert [text for _, text in messages(chat)] == ["What is in this photo?", "A heron."]


async def test_a_search_finds_claude_thinking_and_names_it_as_thinking(
    data_dir: Path, client_factory: Any
) -> None:
    await import_into(data_dir, "chats", CHATS / "claude")
    async with client_factory() as client:
        found = await call(client, "chats_search", query='"BF1 postcode district"')
        only_thinking = await call(client, "chats_search", query="BFPO", sender="assistant (thinking)")
    (hit,) = found["results"]
    assert hit["title"] == "UK postcode validation regex"
    assert (hit["sender"], hit["role"]) == ("assistant (thinking)", "assistant")
    assert hit["loc"]["message_id"].endswith("#thinking-1")
    assert [r["sender"] for r in only_thinking["results"]] == ["assistant (thinking)"]
