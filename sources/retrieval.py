"""Retrieval modes under a token budget (DESIGN §6). Pure: no I/O.

A source hands over its item's text and ordered chunk spans; these functions choose the
window to return within a number of characters. How many characters fit `max_tokens` is
measured on the rendered result (`fitting.py`), counted by the budget's `counter`: real cl100k
tokens, or ceil(chars / chars_per_token) when `chars_per_token` is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import InvalidArgumentError
from .models import Retrieval, RetrievalMode
from .text.snippets import clamp, clamp_snippet_length
from .text.tokens import TokenCounter


@dataclass(frozen=True)
class Defaults:
    """Effective defaults for a request: server config, then per-request config, then session
    defaults; explicit tool input wins over all of them."""

    snippet_length: int = 300
    max_tokens: int = 4000
    chars_per_token: int | None = None  # None: count real cl100k tokens
    sibling_window: int = 2
    order_by: str = "relevance"
    glossary_file: Path | None = None  # the server's glossary, under each user's own


@dataclass(frozen=True)
class Budget:
    mode: RetrievalMode
    snippet_length: int
    max_tokens: int
    chars_per_token: int | None
    sibling_window: int

    @property
    def counter(self) -> TokenCounter:
        return TokenCounter(self.chars_per_token)

    @property
    def max_chars(self) -> int:
        """The characters `max_tokens` allows by the estimate (4 per token unless given)."""
        return self.counter.chars_for(self.max_tokens)


@dataclass(frozen=True)
class Span:
    start: int
    end: int


@dataclass(frozen=True)
class Window:
    start: int
    end: int
    first_chunk: int
    last_chunk: int
    truncated: bool


def with_default_mode(retrieval: Retrieval | None, mode: RetrievalMode) -> Retrieval:
    """`retrieval` with `mode` when it names none (a source's own default mode); the other
    knobs, and a mode given explicitly, are kept."""
    if retrieval is not None and "mode" in retrieval.model_fields_set:
        return retrieval
    return (retrieval or Retrieval()).model_copy(update={"mode": mode})


MIN_MAX_TOKENS = 50
MAX_MAX_TOKENS = 32000  # a larger budget is lowered to this (and said): a ceiling may shrink


def resolve_budget(retrieval: Retrieval | None, defaults: Defaults, warnings: list[str]) -> Budget:
    """Clamp the size knobs (reporting each clamp) and resolve `auto`; a `max_tokens` under the
    least any answer needs is refused, never raised."""
    r = retrieval or Retrieval()
    if r.max_tokens is not None and r.max_tokens < MIN_MAX_TOKENS:  # a ceiling is never raised
        raise InvalidArgumentError("retrieval.max_tokens", f"must be {MIN_MAX_TOKENS}..{MAX_MAX_TOKENS}")
    max_tokens = clamp(
        "retrieval.max_tokens", r.max_tokens, defaults.max_tokens, MIN_MAX_TOKENS, MAX_MAX_TOKENS, warnings
    )
    mode: RetrievalMode = r.mode
    if mode == "auto":
        mode = "chunk_with_siblings" if r.max_tokens is not None else "snippet"
    return Budget(
        mode=mode,
        snippet_length=clamp_snippet_length(r.snippet_length, defaults.snippet_length, warnings),
        max_tokens=max_tokens,
        chars_per_token=_chars_per_token(r.chars_per_token, defaults.chars_per_token, warnings),
        sibling_window=clamp(
            "retrieval.sibling_window", r.sibling_window, defaults.sibling_window, 0, 20, warnings
        ),
    )


def _chars_per_token(value: int | None, default: int | None, warnings: list[str]) -> int | None:
    """The explicit chars_per_token (the caller's, else the defaults'), clamped; None: real tokens."""
    if value is None and default is None:
        return None
    return clamp("retrieval.chars_per_token", value, default or 4, 1, 10, warnings)


def _fit_end(text: str, start: int, end: int, max_chars: int) -> int:
    """An end within `max_chars` of `start`, preferring a word boundary."""
    if end - start <= max_chars:
        return end
    limit = start + max_chars
    space = text.rfind(" ", start + max_chars // 2, limit + 1)
    nl = text.rfind("\n", start + max_chars // 2, limit + 1)
    cut = max(space, nl)
    return cut if cut > start else limit


def chunk_window(
    text: str,
    chunks: list[Span],
    anchor: int,
    budget: Budget,
    siblings: bool,
    max_chars: int | None = None,
) -> Window:
    """The anchor chunk, grown alternately right and left (`siblings`) while `max_chars` (by
    default the budget's estimate) allows; then as much of the next chunk as still fits
    (`truncated`: read on from `end`)."""
    limit = budget.max_chars if max_chars is None else max_chars
    anchor = min(max(anchor, 0), len(chunks) - 1)
    first = last = anchor
    start, end = chunks[anchor].start, chunks[anchor].end
    if end - start > limit:
        return Window(start, _fit_end(text, start, end, limit), anchor, anchor, True)
    if siblings:
        for step in range(1, budget.sibling_window + 1):
            grew = False
            for candidate in (anchor + step, anchor - step):
                if not 0 <= candidate < len(chunks):
                    continue
                new_start = min(start, chunks[candidate].start)
                new_end = max(end, chunks[candidate].end)
                if new_end - new_start <= limit:
                    start, end = new_start, new_end
                    first, last = min(first, candidate), max(last, candidate)
                    grew = True
            if not grew:
                break
    window = Window(start, end, first, last, False)
    return _fill_right(text, chunks, window, limit) if siblings else window


def _fill_right(text: str, chunks: list[Span], w: Window, limit: int) -> Window:
    """`w` with as much of the next chunk as still fits `limit`, when any of it does."""
    if w.last_chunk + 1 >= len(chunks) or w.end - w.start >= limit:
        return w
    room = limit - (w.end - w.start)
    end = _fit_end(text, w.end, chunks[w.last_chunk + 1].end, room)
    if end <= w.end or end >= chunks[w.last_chunk + 1].end:
        return w
    return Window(w.start, end, w.first_chunk, w.last_chunk, True)


def full_window(text: str, offset: int, budget: Budget, max_chars: int | None = None) -> Window:
    """The item from `offset`, cut to `max_chars` (by default the budget's estimate); `truncated`
    when more follows."""
    offset = min(max(offset, 0), len(text))
    end = _fit_end(text, offset, len(text), budget.max_chars if max_chars is None else max_chars)
    return Window(offset, end, -1, -1, end < len(text))
