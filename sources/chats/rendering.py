"""The text `chats_get` (and `knowledge_get` of a conversation) sends: its messages. Pure."""

from __future__ import annotations

from ..wire import dump
from .models import ChatGetResponse


def render_get(response: ChatGetResponse) -> str:
    m = response.meta
    head = f"{m.title} — {m.uri} ({response.mode_used}, ~{response.estimated_tokens} tokens"
    head += f", {response.message_count} messages" + (", truncated)" if response.truncated else ")")
    lines = [head, ""]
    for msg in response.content:
        stamp = f" [{msg.timestamp}]" if msg.timestamp else ""
        lines += [f"#{msg.message_index} {msg.sender} ({msg.role}){stamp}:", msg.text, ""]
    if response.next is not None:
        lines.append(f"continue with {dump(response.next)}")
    lines += [f"warning: {w}" for w in response.warnings]
    return "\n".join(lines).rstrip()
