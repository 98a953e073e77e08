"""Result shapes of the chats source: a conversation hit, a message, and the get response."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..models import GetResponse, Loc, NextStep, ResultItem
from ..wire import dump

ChatMode = Literal["page", "snippet", "chunk", "chunk_with_siblings", "full", "auto"]


class ChatResult(ResultItem):
    """A conversation hit; sender, role and message_id are those of its best-matching message."""

    conversation_id: str | None = Field(default=None, description="Pass to chats_get.")
    message_id: str | None = Field(default=None, description="The best-matching message.")
    sender: str | None = Field(default=None, description="Who wrote that message (display name, else role).")
    role: Literal["user", "assistant", "system"] | None = None
    character_id: str | None = Field(default=None, description="The linked character card (characters_get).")
    character_name: str | None = Field(default=None, description="The SillyTavern character of the chat.")


class ChatMessage(BaseModel):
    message_id: str
    message_index: int = Field(ge=0, description="0-based position in the conversation.")
    role: Literal["user", "assistant", "system"]
    sender: str
    timestamp: str | None = None
    text: str


class ChatNextStep(NextStep):
    """How to go on: call chats_get again with `page` (and page_size), or with `loc` and `retrieval`."""

    loc: Loc | None = None  # type: ignore[assignment]
    retrieval: dict[str, object] | None = None  # type: ignore[assignment]
    page: int | None = None
    page_size: int | None = None


class ChatGetResponse(GetResponse[ChatResult]):
    content: list[ChatMessage] = Field(description="The messages returned, in conversation order.")
    mode_used: ChatMode = Field(  # type: ignore[assignment]
        description="page (a page of messages: the default) or the retrieval mode applied."
    )
    next: ChatNextStep | None = None
    page: int | None = Field(default=None, description="The page returned, in page mode.")
    page_count: int | None = Field(default=None, description="Pages in the conversation at this page_size.")
    message_count: int = Field(default=0, description="Messages in the whole conversation.")


def render_get(response: ChatGetResponse) -> str:
    """The text chats_get (and knowledge_get of a conversation) sends: its messages. Pure."""
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
