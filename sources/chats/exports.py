"""ChatGPT and Claude data exports (`conversations.json`).

ChatGPT keeps each conversation as a tree (`mapping`: node → {message, parent, children}):
editing a prompt or regenerating an answer starts a new branch. What the user last saw is the
branch ending at `current_node`, so that branch is walked from `current_node` up to the root
and reversed; abandoned regenerations are not indexed. Nodes without a message, hidden
nodes, empty system messages, tool traffic and non-text content are skipped.

Claude exports are flat: `chat_messages` in order, `sender` human or assistant, the text in
`content` parts of type text (or in `text`). A part of type thinking (the reasoning of extended
thinking, which claude.ai shows folded above the answer) becomes a message of its own, in its
place, with role assistant and sender `assistant (thinking)`, so a search finds it and says what
it is; tool use and tool results are left out.
"""

from __future__ import annotations

from typing import Any

from ..text import dates
from .parsing import Conversation, Message, normalize_role, text_of

CHATGPT_TEXT_TYPES = frozenset({"text", "multimodal_text"})
THINKING_SENDER = "assistant (thinking)"


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
        messages.extend(claude_messages(m, f"{where}: message {i}"))
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


def claude_messages(m: dict[str, Any], where: str) -> list[Message]:
    """One Claude message as it reads: its text parts as one message (at the first text part)
    and each thinking part as a message of its own, in the order of its parts."""
    role = normalize_role(m.get("sender"), where)
    stamp = dates.parse_date(m.get("created_at"))
    uuid = str(m["uuid"]) if m.get("uuid") else None
    parts = _list(m.get("content"))
    text = text_of(parts) or str(m.get("text") or "")
    out: list[Message] = []
    placed = False
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else "text"
        if kind == "thinking":
            thought = _thinking_text(part)
            if thought:
                n = sum(1 for x in out if x.sender == THINKING_SENDER) + 1
                out.append(
                    Message(
                        role="assistant",
                        text=thought,
                        sender=THINKING_SENDER,
                        timestamp=dates.parse_date(part.get("start_timestamp")) or stamp,
                        message_id=f"{uuid}#thinking-{n}" if uuid else None,
                    )
                )
        elif kind == "text" and not placed:
            out.append(Message(role=role, text=text, timestamp=stamp, message_id=uuid))
            placed = True
    if not placed:
        out.append(Message(role=role, text=text, timestamp=stamp, message_id=uuid))
    return out


def _thinking_text(part: dict[str, Any]) -> str:
    """A thinking part's text, else its summaries (an export may keep only those)."""
    thought = part.get("thinking")
    if isinstance(thought, str) and thought.strip():
        return thought
    summaries = _list(part.get("summaries"))
    return "\n".join(
        s["summary"] for s in summaries if isinstance(s, dict) and isinstance(s.get("summary"), str)
    )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
