"""Chats: conversations exported from ChatGPT, Claude and SillyTavern, or in the plain format.

An item is one conversation (`chats://<conversation_id>`, the id being the item id); each
message is one chunk, so a hit names its best message. `get` returns messages as structured
content: a page of them by default, or a window around a message under a token budget.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import aiosqlite
from pydantic import Field

from ..errors import InvalidArgumentError, NotFoundError
from ..fitting import fit, trim_meta
from ..models import Loc, Retrieval
from ..retrieval import Budget, Defaults, resolve_budget
from ..search.query import parse_query
from ..search.request import Filter, FtsColumn
from ..search.stemming import QueryMatcher
from ..source import ChunkedSource, Databases, SearchOptions, SearchScope
from ..storage.db import Database
from ..storage.items import ParsedItem
from ..text.snippets import make_snippet
from .exports import chatgpt_conversation, claude_conversation
from .links import open_links
from .migrations import MIGRATIONS
from .models import ChatGetResponse, ChatMessage, ChatNextStep, ChatResult, render_get
from .parsing import Reader, build_item, conversations_from_json, loads, plain_conversation
from .reading import Window, around, forward
from .sillytavern import is_sillytavern, json_lines, sillytavern_conversation

SearchBy = Literal["both", "title", "message"]
MAX_PAGE_SIZE = 200

READERS: dict[str, Reader] = {
    "mapping": chatgpt_conversation,
    "chat_messages": claude_conversation,
    "messages": plain_conversation,
}

# The FTS columns each `by` matches in: a chunk's title is its conversation's title, its body
# the message's text.
BY_COLUMNS: dict[SearchBy, tuple[FtsColumn, ...] | None] = {
    "both": None,
    "title": ("title",),
    "message": ("body",),
}

SENDER_SQL = "(lower(json_extract(c.meta, '$.sender')) = ? OR json_extract(c.meta, '$.role') = ?)"
CHARACTER_SQL = "lower(json_extract(i.meta, '$.character_name')) = ?"
SENDER_PG = "(lower(c.meta ->> 'sender') = %s OR (c.meta ->> 'role') = %s)"
CHARACTER_PG = "lower(i.meta ->> 'character_name') = %s"


def sender_filter(sender: str) -> Filter:
    """Messages by this sender (display name) or of this role, case-insensitive."""
    value = sender.strip().lower()
    return Filter(SENDER_SQL, (value, value), on_chunk=True, pg=SENDER_PG)


def character_filter(character_name: str) -> Filter:
    return Filter(CHARACTER_SQL, (character_name.lower(),), pg=CHARACTER_PG)


class ChatsOptions(SearchOptions):
    by: SearchBy = Field(default="both", description="both (default): title or messages; title; message.")
    character_id: str | None = Field(
        default=None, description="Only chats played with this character card (a characters_search id)."
    )
    sender: str | None = Field(
        default=None, description="Only messages by this sender name or role (user, assistant, system)."
    )


class ChatsSource(ChunkedSource[ChatResult]):
    name = "chats"
    id_field = "conversation_id"
    result_model = ChatResult
    migrations = MIGRATIONS
    extensions = frozenset({".json", ".jsonl"})
    options_model = ChatsOptions

    async def search_scope(self, options: ChatsOptions | None, databases: Databases | None) -> SearchScope:
        """`by` picks the FTS columns; `character_id` is resolved to its card's name."""
        options = options or ChatsOptions()
        filters: list[Filter] = []
        if options.sender is not None and options.sender.strip():
            filters.append(sender_filter(options.sender))
        if options.character_id is not None:
            name = await (await open_links(databases)).name_of(options.character_id)
            if name is None:
                hint = "use an id from characters_search results"
                raise NotFoundError("character_id", options.character_id, hint)
            filters.append(character_filter(name))
        return filters, BY_COLUMNS[options.by]

    async def complete(self, results: list[ChatResult], databases: Databases | None) -> None:
        """Set `character_id` on hits whose chat character matches a character card."""
        links = await open_links(databases)
        for r in results:
            if r.character_name:
                r.character_id = await links.id_for(r.character_name)

    def parse_file(self, path: Path, raw: bytes) -> list[ParsedItem]:
        if path.suffix.lower() == ".jsonl":
            rows = json_lines(raw)
            if rows and is_sillytavern(rows[0]):
                conversations = [sillytavern_conversation(rows, path)]
            else:
                conversations = conversations_from_json(rows, READERS)
        else:
            conversations = conversations_from_json(loads(raw), READERS)
        return [item for conv in conversations if (item := build_item(conv, path)) is not None]

    def fields(self, item: aiosqlite.Row, chunk: aiosqlite.Row | None) -> dict[str, Any]:
        meta = json.loads(chunk["meta"]) if chunk is not None else {}
        return {
            "conversation_id": item["item_id"],
            "message_id": meta.get("message_id"),
            "sender": meta.get("sender"),
            "role": meta.get("role"),
            "character_name": json.loads(item["meta"]).get("character_name"),
        }

    def loc(self, item: aiosqlite.Row, chunk: aiosqlite.Row) -> Loc:
        meta = json.loads(chunk["meta"])
        return Loc(
            conversation_id=item["item_id"],
            message_id=meta.get("message_id"),
            message_index=chunk["chunk_index"],
        )

    def anchor_from_loc(self, loc: Loc, chunks: list[aiosqlite.Row]) -> int | None:
        if loc.message_id is not None:
            for c in chunks:
                if json.loads(c["meta"]).get("message_id") == loc.message_id:
                    return int(c["chunk_index"])
            raise InvalidArgumentError("loc.message_id", "is not a message of this conversation")
        if loc.message_index is not None:
            if loc.message_index >= len(chunks):
                raise InvalidArgumentError("loc.message_index", f"must be 0..{len(chunks) - 1} here")
            return loc.message_index
        return super().anchor_from_loc(loc, chunks)

    async def get(
        self,
        db: Database,
        item_id: str,
        *,
        loc: Loc | None = None,
        query: str | None = None,
        retrieval: Retrieval | None = None,
        defaults: Defaults,
        page: int = 1,
        page_size: int = 50,
        databases: Databases | None = None,
    ) -> ChatGetResponse:
        if page < 1:
            raise InvalidArgumentError("page", "must be 1 or more")
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidArgumentError("page_size", f"must be 1..{MAX_PAGE_SIZE}")
        if loc is not None and loc.conversation_id not in (None, item_id):
            raise InvalidArgumentError("loc.conversation_id", "must match conversation_id, or be omitted")
        warnings: list[str] = []
        budget = resolve_budget(retrieval, defaults, warnings)
        item, chunks = await self.load_item(db, item_id)
        messages = [_message(c) for c in chunks]
        explicit = loc is not None or bool(query)
        anchor = await self.find_anchor(db, item, chunks, loc, query) if chunks else 0
        pages = max(1, math.ceil(len(messages) / page_size))
        if budget.mode == "snippet":
            if page > pages:
                raise InvalidArgumentError("page", f"must be 1..{pages} for this conversation")
            anchor = anchor if explicit else min((page - 1) * page_size, max(len(chunks) - 1, 0))
        meta = self.result(item, chunks[anchor] if chunks else None, snippet="", score=1.0, rank=1)
        if messages:
            found = QueryMatcher(parse_query(query or "")).find(messages[anchor].text)
            meta.snippet = make_snippet(messages[anchor].text, budget.snippet_length, found.first)
        await self.complete([meta], databases)
        reading = _Reading(
            self, item, chunks, messages, anchor, meta, budget, page, page_size, pages, loc, warnings
        )
        return fit(reading.build, _render, budget.counter, budget.max_tokens, reading.upper())

    def window(
        self,
        messages: list[ChatMessage],
        chunks: list[aiosqlite.Row],
        anchor: int,
        budget: Budget,
        page: int,
        page_size: int,
        loc: Loc | None,
        max_chars: int,
    ) -> Window:
        """The messages the budget's mode returns within `max_chars` characters of text."""
        if not messages:
            return Window([], False, None)
        if budget.mode == "snippet":
            return forward(messages, (page - 1) * page_size, page_size, max_chars)
        if budget.mode == "full":
            skip = 0
            if loc is not None and loc.approx_offset is not None:
                skip = loc.approx_offset - chunks[anchor]["start_offset"]
                skip = max(0, min(skip, len(messages[anchor].text)))
            return forward(messages, anchor, page_size, max_chars, skip)
        siblings = budget.sibling_window if budget.mode == "chunk_with_siblings" else 0
        return around(messages, anchor, max_chars, siblings)

    def next_step(
        self,
        item: aiosqlite.Row,
        chunks: list[aiosqlite.Row],
        window: Window,
        budget: Budget,
        page: int,
        pages: int,
        page_size: int,
        max_tokens: int,
        lean: bool = False,
    ) -> ChatNextStep | None:
        """How to go on after `window` (`max_tokens`: the budget the next call keeps; `lean`:
        its loc names the message by index only)."""

        def loc_of(chunk: aiosqlite.Row) -> Loc:
            return Loc(message_index=chunk["chunk_index"]) if lean else self.loc(item, chunk)

        if window.resume is not None:
            index, into = window.resume
            loc = loc_of(chunks[index])
            loc.approx_offset = chunks[index]["start_offset"] + into if into else None
            return ChatNextStep(loc=loc, retrieval={"mode": "full", "max_tokens": max_tokens})
        if budget.mode == "snippet":
            return ChatNextStep(page=page + 1, page_size=page_size) if page < pages else None
        last = window.messages[-1].message_index if window.messages else len(chunks)
        if last + 1 < len(chunks):
            return ChatNextStep(
                loc=loc_of(chunks[last + 1]),
                retrieval={"mode": budget.mode, "max_tokens": max_tokens},
            )
        return None


@dataclass
class _Reading:
    """One chats_get: what `fit` rebuilds the response from, for each cut it measures."""

    source: ChatsSource
    item: aiosqlite.Row
    chunks: list[aiosqlite.Row]
    messages: list[ChatMessage]
    anchor: int
    meta: ChatResult
    budget: Budget
    page: int
    page_size: int
    pages: int
    loc: Loc | None
    warnings: list[str]

    def window(self, max_chars: int) -> Window:
        r = self
        return r.source.window(
            r.messages, r.chunks, r.anchor, r.budget, r.page, r.page_size, r.loc, max_chars
        )

    def upper(self) -> int:
        """The characters of message text the mode returns when the budget is no limit."""
        return sum(len(m.text) for m in self.window(sum(len(m.text) for m in self.messages)).messages)

    def build(self, level: int, cut: int, max_tokens: int) -> ChatGetResponse:
        b, window = self.budget, self.window(cut)
        paging = (self.page, self.pages, self.page_size, max_tokens, level >= 2)
        step = self.source.next_step(self.item, self.chunks, window, b, *paging)
        return ChatGetResponse(
            meta=trim_meta(self.meta, level),
            content=window.messages,
            mode_used="page" if b.mode == "snippet" else b.mode,
            estimated_tokens=max_tokens,
            tokenizer=b.counter.tokenizer,
            truncated=window.truncated,
            next=step,
            warnings=list(self.warnings),
            page=self.page if b.mode == "snippet" else None,
            page_count=self.pages,
            message_count=len(self.messages),
        )


def _render(response: ChatGetResponse) -> str:
    return render_get(response)


def _message(chunk: aiosqlite.Row) -> ChatMessage:
    meta = json.loads(chunk["meta"])
    return ChatMessage(
        message_id=meta.get("message_id") or str(chunk["chunk_index"]),
        message_index=chunk["chunk_index"],
        role=meta.get("role", "user"),
        sender=meta.get("sender") or meta.get("role", ""),
        timestamp=meta.get("timestamp"),
        text=chunk["body"],
    )


source = ChatsSource()
