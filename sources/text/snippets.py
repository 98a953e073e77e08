"""Snippets: short plain text around the first match, cut at sentence or word boundaries.

Pure: no I/O. Match positions come from the query's matcher (`search/stemming.py`), so the
snippet centres on what the query matched (stemmed forms included).
"""

from __future__ import annotations

import re

DEFAULT_SNIPPET_LENGTH = 300
MIN_SNIPPET_LENGTH = 50
MAX_SNIPPET_LENGTH = 1000
ELLIPSIS = "…"

_SENTENCE_END = re.compile(r"[.!?。！？][\"')\]]?\s")


def collapse(text: str) -> str:
    """Plain text with every whitespace run as one space, trimmed."""
    return text if is_collapsed(text) else " ".join(text.split())


def is_collapsed(text: str) -> bool:
    """`text` is its own `collapse`: no whitespace but single spaces between words (most chunks
    of prose: told in a few C scans, where splitting and joining copies every word). An ASCII
    text (`isascii` reads a flag) is looked through for each character `str.split` splits at
    besides the space, one `memchr` each; any other by `isprintable`, false for every whitespace
    character `str.split` splits at but the space (and slower: a table lookup per character)."""
    if text[:1] == " " or text[-1:] == " " or "  " in text:
        return False
    if not text.isascii():
        return text.isprintable()
    return not (
        "\n" in text
        or "\r" in text
        or "\t" in text
        or "\x0b" in text
        or "\x0c" in text
        or "\x1c" in text
        or "\x1d" in text
        or "\x1e" in text
        or "\x1f" in text
    )


def _collapse_with_position(text: str, position: int, collapsed: bool = False) -> tuple[str, int]:
    """Collapse whitespace and map one position of the original text into the result
    (`collapsed`: `text` is known to be its own collapse)."""
    if collapsed or is_collapsed(text):  # every position stays where it is
        return text, min(max(position, 0), len(text))
    leading = len(text) - len(text.lstrip())
    head = collapse(text[:position]) if position > leading else ""
    body = collapse(text)
    if head and position < len(text) and text[position - 1].isspace():
        head += " "
    return body, min(len(head), len(body))


def _cut_end(text: str, limit: int) -> str:
    """The longest prefix of `text` within `limit` characters that ends at a boundary."""
    if len(text) <= limit:
        return text
    window = text[: limit + 1]
    # Only a sentence end past 60 % of the window counts, so only the matches that can end
    # there are looked for: an end (the whitespace) is at most two characters after its
    # match's start, and no match can start inside another (a sentence mark starts each).
    ends = [m.end() - 1 for m in _SENTENCE_END.finditer(window, max(0, int(limit * 0.6) - 2))]
    if ends and ends[-1] >= limit * 0.6:
        return window[: ends[-1]].rstrip()
    space = window.rfind(" ")
    return (window[:space] if space > limit * 0.5 else window[:limit]).rstrip()


def _start_at_boundary(text: str, start: int, anchor: int) -> int:
    """Move `start` forward to a sentence start (or else a word start) before `anchor`."""
    if start <= 0:
        return 0
    # A sentence start only when it is close: further on, it would shrink the snippet.
    for m in _SENTENCE_END.finditer(text, start, min(anchor + 1, start + 40)):
        return m.end()
    space = text.find(" ", start, anchor + 1)
    return space + 1 if space != -1 else start


def make_snippet(
    text: str, length: int = DEFAULT_SNIPPET_LENGTH, match_at: int | None = None, collapsed: bool = False
) -> str:
    """At most `length` characters of `text`, centred on `match_at` when given; `collapsed`:
    the caller knows `text` is its own `collapse` (`is_collapsed`), so it is not looked through
    again (the same snippet either way).

    A long text is cut to a window around the match first (collapsing whitespace in all of a
    2,000-character chunk cost more than the rest of a search): the snippet comes out the same,
    as it never reaches more than a third of its length before the match or past its length
    after it.
    """
    before, after = 2 * length, 3 * length
    if len(text) > before + after:
        at = match_at or 0
        lo = at - before if at > before else 0
        window = text[lo : at + after]
        # a part of a collapsed text is collapsed but for a space it may begin or end with
        whole = collapsed and window[:1] != " " and window[-1:] != " "
        snippet = _make_snippet(window, length, None if match_at is None else match_at - lo, whole)
        if snippet.endswith(ELLIPSIS) or lo + len(window) >= len(text):
            return snippet
    return _make_snippet(text, length, match_at, collapsed)


def _make_snippet(text: str, length: int, match_at: int | None, collapsed: bool = False) -> str:
    body, anchor = _collapse_with_position(text, match_at or 0, collapsed)
    if len(body) <= length:
        return body
    if match_at is None or anchor < length // 2:
        return _cut_end(body, length - 1) + ELLIPSIS
    room = length - 1  # the leading ellipsis
    # Near the end, start earlier so the snippet still fills its length.
    start = min(max(0, anchor - length // 3), max(0, len(body) - room))
    start = _start_at_boundary(body, start, anchor)
    rest = body[start:]
    if len(rest) > room:
        return ELLIPSIS + _cut_end(rest, room - 1) + ELLIPSIS
    return ELLIPSIS + rest


def clamp_snippet_length(value: int | None, default: int, warnings: list[str]) -> int:
    """Clamp to 50..1000, noting any clamp in `warnings`."""
    return clamp("snippet_length", value, default, MIN_SNIPPET_LENGTH, MAX_SNIPPET_LENGTH, warnings)


def clamp(field: str, value: int | None, default: int, low: int, high: int, warnings: list[str]) -> int:
    """A size knob: out-of-range values are clamped and the clamp is reported."""
    if value is None:
        return default
    if value < low or value > high:
        clamped = min(max(value, low), high)
        warnings.append(f"{field} {value} is outside {low}..{high}; used {clamped}")
        return clamped
    return value
