"""Fitting a get result to its token budget, measured on what is sent.

A get result goes out twice: as structured content (the compact JSON of `dump(response)`, as the
SDK puts it on the wire: UTF-8, no escapes) and as a text rendering. `max_tokens` holds for each,
counted by the request's `TokenCounter` (real cl100k tokens unless `chars_per_token` is given).
Nothing here assumes how much the envelope (meta, `next`, warnings, the rendering's lines)
costs: a source hands over a `Build` — its response for a trim level of the meta and a cut (the
characters of content to take) — and the fit measures real renderings, searching for the largest
cut that fits in a few probes.

When the meta alone leaves no room, it is trimmed (level 1: no snippet, which repeats the
content's start; level 2: only the fields every result has, and a lean `next`). When even that
leaves no room for content, the budget is never raised: the answer is the item's handle (`uri`
and title), `truncated: true`, no `next`, and a warning naming the smallest budget that would
return content (the handle's title is cut, and other warnings dropped, until it fits). When not
even the handle fits, the call is refused with that sentence (an error's text is shorter than
any result's envelope).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from .errors import InvalidArgumentError
from .models import ResultItem
from .text.tokens import TokenCounter
from .wire import dump

M = TypeVar("M", bound=BaseModel)
Meta = TypeVar("Meta", bound=ResultItem)
Build = Callable[[int, int, int], M]
"""A response for (meta trim level, content cut in characters, max_tokens for `next`)."""

LEVELS = 3
MIN_CONTENT_TOKENS = 50  # what the budget a handle answer names leaves for content
MAX_PROBES = 16
TITLE_CHARS = 80  # a title longer than this is cut at trim level 2
KEEP_AT_LEVEL_2 = frozenset(ResultItem.model_fields) - {"tags", "matched_terms", "loc"}
HANDLE_TITLE_CHARS = (TITLE_CHARS, 40, 16, 0)  # a handle's title, cut until the answer fits
NO_ROOM = "retrieval.max_tokens {given} leaves no room for content"
FIELD = "retrieval.max_tokens"


def structured_json(response: BaseModel) -> str:
    """The structured content as sent: compact JSON of `dump(response)`, non-ASCII unescaped."""
    return json.dumps(dump(response), separators=(",", ":"), ensure_ascii=False)


def rendered_tokens(
    response: BaseModel, render: Callable[[Any], str], counter: TokenCounter, limit: int | None = None
) -> int:
    """Tokens of the larger of the two renderings of `response` (past `limit`, the structured
    one's alone: it already says the response does not fit)."""
    structured = counter.count(structured_json(response))
    if limit is not None and structured > limit:
        return structured
    return max(structured, counter.count(render(response)))


def trim_meta(meta: Meta, level: int) -> Meta:
    """`meta` at a trim level: 0 whole; 1 without its snippet; 2 only the fields every result
    has (the type-aware ones, tags, matched terms and `loc` dropped; a long title cut).
    At level 2 a source also keeps `next` to the fields its get needs (`lean`)."""
    if level <= 0:
        return meta
    update: dict[str, Any] = {"snippet": ""}
    if level >= 2:
        for name, field in type(meta).model_fields.items():
            if name not in KEEP_AT_LEVEL_2 and field.default is None:
                update[name] = None
        update |= {"tags": [], "matched_terms": []}
        if len(meta.title) > TITLE_CHARS:
            update["title"] = meta.title[: TITLE_CHARS - 1].rstrip() + "…"
    return meta.model_copy(update=update)


def largest_fit(
    size: Callable[[int], int], budget: int, upper: int, guess: int, known: tuple[int, int]
) -> int:
    """The largest cut in 0..`upper` whose size is within `budget`, in a few probes.

    `size` grows (about) with the cut; `known` is a cut already measured to fit (at least
    (0, size(0))). Probes interpolate between the best fit and the smallest miss, and stop once
    the fit is within 1 % of the budget.
    """
    lo, lo_size = known
    hi, hi_size = upper + 1, -1
    slack = max(1, budget // 100)
    if lo >= upper or budget - lo_size <= slack:
        return lo
    x = min(guess, upper) if guess > lo else _next_probe(lo, lo_size, hi, hi_size, budget, upper)
    for _ in range(MAX_PROBES):
        if not lo < x < hi:
            break
        s = size(x)
        if s <= budget:
            lo, lo_size = x, s
            if x == upper or budget - s <= slack:
                break
        else:
            hi, hi_size = x, s
        x = _next_probe(lo, lo_size, hi, hi_size, budget, upper)
    return lo


def _next_probe(lo: int, lo_size: int, hi: int, hi_size: int, budget: int, upper: int) -> int:
    if hi_size < 0:  # nothing missed yet: extrapolate from the best fit, at least doubling room
        rate = max(lo_size, 1) / max(lo, 1)
        return min(upper, max(lo + 1, lo + int((budget - lo_size) / max(rate, 1e-9))))
    if hi - lo <= 1:
        return lo
    share = (budget - lo_size) / max(hi_size - lo_size, 1)
    x = lo + int((hi - lo) * share * 0.98)
    return min(max(x, lo + 1), hi - 1)


def fit(
    build: Build[M],
    render: Callable[[Any], str],
    counter: TokenCounter,
    max_tokens: int,
    upper: int,
) -> M:
    """The fullest response whose renderings both fit `max_tokens` (see the module docstring).
    `upper` is the most content characters the mode could return."""
    found = _fullest(build, render, counter, max_tokens, upper)
    if found is not None:
        return found
    needed = smallest_budget(build, render, counter, max_tokens, upper)
    return handle_only(build(LEVELS - 1, 0, max_tokens), render, counter, max_tokens, needed)


def _fullest(
    build: Build[M], render: Callable[[Any], str], counter: TokenCounter, budget: int, upper: int
) -> M | None:
    """The fullest response within `budget`, or None when no content fits beside the envelope
    (an item with no content fits with its envelope alone)."""
    guess = min(upper, counter.chars_for(budget))
    first = build(0, guess, budget)
    first_size = rendered_tokens(first, render, counter, budget)
    if first_size <= budget and guess >= upper:
        return _finish(first, render, counter, first_size)
    if first_size <= budget:  # the whole meta leaves room: no need to trim it
        level, base, known = 0, 0, (guess, first_size)
    else:
        level, base = _level(build, render, counter, budget)
        known = (0, base)
    if base > budget:
        return None
    cut = largest_fit(_sizer(build, render, counter, level, budget), budget, upper, guess, known)
    if cut == 0 and upper > 0:
        return None
    return _finish(build(level, cut, budget), render, counter)


def smallest_budget(
    build: Build[M], render: Callable[[Any], str], counter: TokenCounter, max_tokens: int, upper: int
) -> int:
    """The smallest budget (about) whose answer carries the envelope and some content: the
    trimmed envelope plus `MIN_CONTENT_TOKENS`, checked by fitting at it and grown until it
    holds."""
    needed = rendered_tokens(build(LEVELS - 1, 0, max_tokens), render, counter) + MIN_CONTENT_TOKENS
    needed = max(needed, max_tokens + 1)
    for _ in range(8):
        if _fullest(build, render, counter, needed, upper) is not None:
            break
        needed += max(MIN_CONTENT_TOKENS, needed // 4)
    return needed


def handle_only(
    response: M, render: Callable[[Any], str], counter: TokenCounter, max_tokens: int, needed: int
) -> M:
    """`response` cut to the item's handle (uri and title), `truncated`, no `next`, and a
    warning naming `needed`; the title is cut (then other warnings dropped) until it fits, else
    the call is refused naming `needed`."""
    meta = trim_meta(response.meta, LEVELS - 1)  # type: ignore[attr-defined]
    meta = meta.model_copy(update={"created_at": "", "last_modified": "", "snippet": ""})
    note = NO_ROOM.format(given=max_tokens) + f"; {needed} would return some"
    others = [w for w in response.warnings if not w.startswith(NO_ROOM.format(given=max_tokens))]  # type: ignore[attr-defined]
    shape: dict[str, Any] = {
        "content": _empty(response.content),  # type: ignore[attr-defined]
        "attachments": [],
        "truncated": True,
        "next": None,
    }
    for kept in (others, []):
        for chars in HANDLE_TITLE_CHARS:
            title = meta.title if len(meta.title) <= chars else meta.title[: max(chars - 1, 0)].rstrip()
            title += "…" if chars and title != meta.title else ""
            update = {**shape, "meta": meta.model_copy(update={"title": title}), "warnings": [*kept, note]}
            best = _finish(response.model_copy(update=update), render, counter)
            if best.estimated_tokens <= max_tokens:  # type: ignore[attr-defined]
                return best
    raise InvalidArgumentError(FIELD, f"{max_tokens} too small; {needed} would return some")


def _empty(content: Any) -> Any:
    """No content, in the shape the response carries it (text, or a list of messages/cues)."""
    return "" if isinstance(content, str) or content is None else type(content)()


def _sizer(
    build: Build[M], render: Callable[[Any], str], counter: TokenCounter, level: int, budget: int
) -> Callable[[int], int]:
    return lambda cut: rendered_tokens(build(level, cut, budget), render, counter, budget)


def _level(
    build: Build[M], render: Callable[[Any], str], counter: TokenCounter, max_tokens: int
) -> tuple[int, int]:
    """The first trim level whose envelope (no content) takes at most half the budget, else the
    last; and that envelope's size."""
    base = 0
    for level in range(LEVELS):
        base = rendered_tokens(build(level, 0, max_tokens), render, counter, max_tokens)
        if base <= max_tokens // 2:
            return level, base
    return LEVELS - 1, base


def _finish(response: M, render: Callable[[Any], str], counter: TokenCounter, count: int | None = None) -> M:
    """Record the count (`count`, when already measured): `estimated_tokens` held the budget
    while measuring (as many digits or more), so the real count, once written in, can only stay
    or shrink."""
    if count is None:
        count = rendered_tokens(response, render, counter)
    for _ in range(3):
        response.estimated_tokens = count  # type: ignore[attr-defined]
        again = rendered_tokens(response, render, counter)
        if again == count:
            break
        count = again
    return response
