"""ChatGPT and Claude data exports (`conversations.json`).

ChatGPT keeps each conversation as a tree (`mapping`: node → {message, parent, children}):
editing a prompt or regenerating an answer starts a new branch. What the user last saw is the
branch ending at `current_node`, so that branch is walked from `current_node` up to the root
and reversed; abandoned regenerations are not indexed. Nodes without a message, hidden
nodes, empty system messages, tool traffic and non-text content are skipped.

Claude exports are flat: `chat_messages` in order, `sender` human or assistant, the text in
`content` parts of type text (or in `text`).
"""

from __future__ import annotations

from typing import Any

from ..text import dates
from .parsing import Conversation, Message, normalize_role, text_of

CHATGPT_TEXT_TYPES = frozenset({"text", "multimodal_text"})


def chatgpt_conversation(obj: dict[str, Any], key: str, where: str) -> Conversation:
    mapping = obj.get("mapping")
    if not isinstance(mapping, dict):
        raise ValueError(f"{where}: 'mapping' must be an object")
    messages = [
        m
        for node in chatgpt_branch(mapping, obj.get("current_node"))
        if (m := chatgpt_message(node)) is not None
    ]
    meta: dict[str, Any] = {"format": "chatgpt"}
    source_id = obj.get("id") or obj.get("conversation_id")
    if source_id:
        meta["source_id"] = str(source_id)
    if obj.get("default_model_slug"):
        meta["model"] = obj["default_model_slug"]
    return Conversation(
        key=key,
        title=obj.get("title"),
        messages=messages,
        created_at=dates.parse_date(obj.get("create_time")),
        updated_at=dates.parse_date(obj.get("update_time")),
        meta=meta,
    )


def chatgpt_branch(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The nodes from the root to `current_node` (or, without one, to the newest leaf)."""
    if not isinstance(current, str) or current not in mapping:
        current = _newest_leaf(mapping)
    branch: list[dict[str, Any]] = []
    seen: set[str] = set()
    while isinstance(current, str) and current in mapping and current not in seen:
        seen.add(current)
        node = mapping[current]
        branch.append(node)
        current = node.get("parent")
    branch.reverse()
    return branch


def _newest_leaf(mapping: dict[str, Any]) -> str | None:
    def created(node_id: str) -> float:
        message = mapping[node_id].get("message") or {}
        return float(message.get("create_time") or 0)

    leaves = [k for k, n in mapping.items() if not n.get("children")]
    return max(leaves, key=created, default=None)


def chatgpt_message(node: dict[str, Any]) -> Message | None:
    message = node.get("message")
    if not isinstance(message, dict):
        return None
    role = (message.get("author") or {}).get("role")
    content = message.get("content") or {}
    metadata = message.get("metadata") or {}
    if (
        role not in ("user", "assistant", "system")
        or metadata.get("is_visually_hidden_from_conversation")
        or message.get("recipient", "all") not in ("all", None)
        or content.get("content_type") not in CHATGPT_TEXT_TYPES
    ):
        return None
    text = "\n".join(t for t in map(_part_text, content.get("parts") or []) if t.strip())
    if not text.strip():
        return None
    return Message(
        role=role,
        text=text,
        timestamp=dates.parse_date(message.get("create_time")),
        message_id=str(message.get("id") or node.get("id") or "") or None,
    )


def _part_text(part: Any) -> str:
    """A text part, or the transcript of a voice part; images and files have none."""
    if isinstance(part, str):
        return part
    text = part.get("text") if isinstance(part, dict) else None
    return text if isinstance(text, str) else ""


def claude_conversation(obj: dict[str, Any], key: str, where: str) -> Conversation:
    raw_messages = obj.get("chat_messages")
    if not isinstance(raw_messages, list):
        raise ValueError(f"{where}: 'chat_messages' must be a list")
    messages = []
    for i, m in enumerate(raw_messages):
        if not isinstance(m, dict):
            raise ValueError(f"{where}: message {i} must be an object")
        text = text_of(m.get("content")) or str(m.get("text") or "")
        messages.append(
            Message(
                role=normalize_role(m.get("sender"), f"{where}: message {i}"),
                text=text,
                timestamp=dates.parse_date(m.get("created_at")),
                message_id=str(m["uuid"]) if m.get("uuid") else None,
            )
        )
    meta: dict[str, Any] = {"format": "claude"}
    if obj.get("uuid"):
        meta["source_id"] = str(obj["uuid"])
    return Conversation(
        key=key,
        title=obj.get("name"),
        messages=messages,
        created_at=dates.parse_date(obj.get("created_at")),
        updated_at=dates.parse_date(obj.get("updated_at")),
        meta=meta,
    )
