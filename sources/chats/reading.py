"""Which messages of a conversation a chats_get returns, under a character budget. Pure: no I/O.

A window never holds more than `max_chars` characters of message text (how many fit the token
budget is measured on the rendered result: `fitting.py`). A message that does not fit whole
is cut at a word boundary, so the budget is filled, and the window says where to resume
(`resume` = message index and characters already returned).
"""

from __future__ import annotations

from dataclasses import dataclass

from .models import ChatMessage


@dataclass(frozen=True)
class Window:
    messages: list[ChatMessage]
    truncated: bool
    resume: tuple[int, int] | None  # (message index, characters into it) where reading goes on


def cut_text(text: str, max_chars: int) -> str:
    """At most `max_chars` of `text`, ending at a word boundary when one is near."""
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    space = max(head.rfind(" "), head.rfind("\n"))
    return head[:space] if space > max_chars // 2 else head


def _cut(message: ChatMessage, skip: int, max_chars: int) -> tuple[ChatMessage, int]:
    """The message from character `skip`, cut to the budget; and how many characters it kept."""
    rest = message.text[skip:]
    kept = cut_text(rest, max_chars)
    return message.model_copy(update={"text": kept}), len(kept)


def forward(messages: list[ChatMessage], start: int, count: int, max_chars: int, skip: int = 0) -> Window:
    """Up to `count` messages from `start` (the first from character `skip`), within the budget."""
    taken: list[ChatMessage] = []
    used = 0
    end = min(len(messages), start + count)
    for index in range(start, end):
        offset = skip if index == start else 0
        size = len(messages[index].text) - offset
        if used + size <= max_chars:
            piece = messages[index] if offset == 0 else _cut(messages[index], offset, size)[0]
            taken.append(piece)
            used += size
            continue
        piece, kept = _cut(messages[index], offset, max_chars - used)
        if kept or not taken:  # the part of this message that still fits
            taken.append(piece)
        return Window(taken, True, (index, offset + kept))
    return Window(taken, False, None)


def around(messages: list[ChatMessage], anchor: int, max_chars: int, siblings: int) -> Window:
    """The anchor message grown alternately right and left (at most `siblings` each side)."""
    if len(messages[anchor].text) > max_chars:
        piece, kept = _cut(messages[anchor], 0, max_chars)
        return Window([piece], True, (anchor, kept))
    first = last = anchor
    used = len(messages[anchor].text)
    right = left = True
    for _ in range(siblings):
        if right and last + 1 < len(messages) and used + len(messages[last + 1].text) <= max_chars:
            last += 1
            used += len(messages[last].text)
        else:
            right = False
        if left and first > 0 and used + len(messages[first - 1].text) <= max_chars:
            first -= 1
            used += len(messages[first].text)
        else:
            left = False
        if not (right or left):
            break
    taken = messages[first : last + 1]
    if siblings and not right and last + 1 < len(messages):  # the next one did not fit whole
        piece, kept = _cut(messages[last + 1], 0, max_chars - used)
        if kept:
            return Window([*taken, piece], True, (last + 1, kept))
    return Window(taken, False, None)
