"""Chat files → one `ParsedItem` per conversation, one chunk per message.

Formats are recognised from the content, not the file name (`.json` and `.jsonl`):

- ChatGPT export `conversations.json`: a list of conversations with a `mapping` message tree
  (see `exports.py`);
- Claude export `conversations.json`: a list of conversations with `chat_messages`
  (see `exports.py`);
- SillyTavern chat `.jsonl`: a metadata line, then one message per line (see `sillytavern.py`);
- the plain format documented here, as one object per `.json` file, a list of such objects,
  or one object per line of a `.jsonl` file::

      {
        "title": "Heat pump sizing",                  # optional; else the first user message
        "id": "hp-2025-03",                           # optional; keys a conversation in a list
        "created_at": "2025-03-08T19:14:02Z",         # optional; else the first message's time
        "updated_at": "2025-03-08T19:26:20Z",         # optional; else the last message's time
        "character": "Captain Mirelle",               # optional; links to a character card
        "messages": [
          {"role": "user",                            # user | assistant | system
                                                      #   (also human, ai, bot, model, character)
           "sender": "Sam Okafor",                    # optional display name; else the role
           "content": "What size heat pump…",         # text, or a list of {"type": "text", "text"}
           "timestamp": "2025-03-08T19:15:40Z",       # optional; ISO 8601 or epoch seconds
           "id": "m1"}                                # optional; else the message's position
        ]
      }

The item's content is the messages as "sender: text" blocks separated by blank lines; each
message's text is one chunk whose meta is {message_id, message_index, role, sender, timestamp}.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..storage.items import ChunkSpan, ParsedItem
from ..text import dates

ROLE_ALIASES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "character": "assistant",
    "char": "assistant",
    "system": "system",
}
TITLE_CHARS = 80


@dataclass
class Message:
    role: str
    text: str
    sender: str | None = None
    timestamp: str | None = None
    message_id: str | None = None


@dataclass
class Conversation:
    key: str
    title: str | None
    messages: list[Message]
    created_at: str | None = None
    updated_at: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def normalize_role(value: Any, where: str) -> str:
    role = ROLE_ALIASES.get(str(value or "").strip().lower())
    if role is None:
        raise ValueError(f"{where}: unknown role {value!r}; use user, assistant or system")
    return role


def text_of(content: Any) -> str:
    """Plain text of a message body: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p if isinstance(p, str) else p.get("text")
            for p in content
            if isinstance(p, str) or (isinstance(p, dict) and p.get("type", "text") == "text")
        ]
        return "\n\n".join(p for p in parts if isinstance(p, str) and p.strip())
    return ""


def build_item(conv: Conversation, path: Path) -> ParsedItem | None:
    """The conversation as an item with one chunk per non-empty message; None when it has none."""
    blocks: list[str] = []
    spans: list[ChunkSpan] = []
    offset = 0
    messages = [m for m in conv.messages if m.text.strip()]
    for index, m in enumerate(messages):
        sender = (m.sender or "").strip() or m.role
        text = m.text.strip()
        prefix = f"{sender}: "
        start = offset + len(prefix)
        blocks.append(prefix + text)
        meta = {
            "message_id": m.message_id or str(index),
            "message_index": index,
            "role": m.role,
            "sender": sender,
            "timestamp": m.timestamp,
        }
        spans.append(ChunkSpan(start, start + len(text), field="message", meta=meta))
        offset = start + len(text) + 2
    if not messages:
        return None
    stamps = [m.timestamp for m in messages if m.timestamp]
    mtime = dates.file_mtime(path)
    created = (stamps[0] if stamps else None) or conv.created_at or mtime
    modified = (stamps[-1] if stamps else None) or conv.updated_at or mtime
    return ParsedItem(
        key=conv.key,
        title=(conv.title or "").strip() or _title_from(messages) or path.stem,
        content="\n\n".join(blocks),
        created_at=created,
        last_modified=modified,
        meta={**conv.meta, "message_count": len(messages), "file_name": path.name},
        chunks=spans,
    )


def _title_from(messages: list[Message]) -> str:
    first = next((m for m in messages if m.role == "user"), messages[0])
    line = first.text.strip().splitlines()[0]
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rsplit(" ", 1)[0] + "…"


def plain_conversation(obj: dict[str, Any], key: str, where: str) -> Conversation:
    raw_messages = obj.get("messages")
    if not isinstance(raw_messages, list):
        raise ValueError(f"{where}: 'messages' must be a list")
    messages = []
    for i, m in enumerate(raw_messages):
        if not isinstance(m, dict):
            raise ValueError(f"{where}: message {i} must be an object")
        messages.append(
            Message(
                role=normalize_role(m.get("role"), f"{where}: message {i}"),
                text=text_of(m.get("content", m.get("text"))),
                sender=m.get("sender") or m.get("name"),
                timestamp=dates.parse_date(m.get("timestamp") or m.get("created_at")),
                message_id=str(m["id"]) if m.get("id") is not None else None,
            )
        )
    meta: dict[str, Any] = {"format": "plain"}
    if obj.get("id") is not None:
        meta["source_id"] = str(obj["id"])
    if obj.get("character"):
        meta["character_name"] = str(obj["character"])
    return Conversation(
        key=key,
        title=obj.get("title"),
        messages=messages,
        created_at=dates.parse_date(obj.get("created_at")),
        updated_at=dates.parse_date(obj.get("updated_at")),
        meta=meta,
    )


Reader = Callable[[dict[str, Any], str, str], Conversation]


def conversations_from_json(data: Any, readers: dict[str, Reader]) -> list[Conversation]:
    """Conversations of a parsed `.json` document: one object or a list, each of a known shape."""
    if isinstance(data, dict):
        return [_read_one(data, readers, "", "conversation")]
    if not isinstance(data, list):
        raise ValueError("expected a conversation object or a list of conversations")
    found = []
    for i, obj in enumerate(data):
        if not isinstance(obj, dict):
            raise ValueError(f"conversation {i}: expected an object")
        key = str(obj.get("id") or obj.get("uuid") or obj.get("conversation_id") or f"#{i}")
        found.append(_read_one(obj, readers, key, f"conversation {i}"))
    return found


def _read_one(obj: dict[str, Any], readers: dict[str, Reader], key: str, where: str) -> Conversation:
    for marker, reader in readers.items():
        if marker in obj:
            return reader(obj, key, where)
    raise ValueError(
        f"{where}: not a recognised chat format (expected a ChatGPT export with 'mapping', a Claude "
        "export with 'chat_messages', or the plain format with 'messages')"
    )


def loads(raw: bytes) -> Any:
    return json.loads(raw.decode("utf-8-sig"))
