"""A text folded for quote matching, and the way back to the original's offsets (pure).

`Normalised` is a text as a quote check compares it: NFKC compatibility forms, quotation marks
as ' and ", dashes as -, lower case and every run of whitespace as one space. It is built in
slices (`Normalised.steps`: a generator that yields between slices of `SLICE` characters), so a
caller can pause between them (the event loop) or give up at a deadline; `Normalised.of` runs
it through. Every pass is a C-speed pass over the slice (`re.sub`, `str.lower`); Python work is
done only per character that NFKC expands and per run of several spaces.

The offsets of the original are kept as `Shifts`: the few segments whose length changed (an
expanded ligature, a collapsed run of spaces), one to one everywhere else.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TypeVar, cast

SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2032\u2035`\u00b4"
DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb"
DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
QUOTE_TABLE = {ord(c): "'" for c in SINGLE_QUOTES} | {ord(c): '"' for c in DOUBLE_QUOTES}
DASH_TABLE = {ord(c): "-" for c in DASHES}
SLICE = 1 << 12
"""Characters folded between two pauses (a fraction of a millisecond of work)."""
OTHER_THAN_ASCII = re.compile(r"[^\x00-\x7f]")
OTHER_SPACES = tuple(c for c in map(chr, range(0x3001)) if c.isspace() and c != " ")
"""Every whitespace character (str.isspace) but the space."""
SPACES = re.compile(r"  +")
DOTTED_I = "\u0130"
"""The one character whose lower case is longer (İ → i̇): folded to "i" first."""

T = TypeVar("T")


def char_form(char: str) -> str:
    """One character as the search sees it: NFKC, quotes and dashes plain."""
    if char.isspace():
        return char
    return unicodedata.normalize("NFKC", char).translate(QUOTE_TABLE).translate(DASH_TABLE)


@dataclass
class Shifts:
    """Segments (start, length, source start, source length) of a text whose length differs
    from their source's, in order; between them the text and its source go one to one."""

    starts: list[int] = field(default_factory=list)
    segments: list[tuple[int, int, int, int]] = field(default_factory=list)

    def add(self, start: int, length: int, origin: int, origin_length: int) -> None:
        self.starts.append(start)
        self.segments.append((start, length, origin, origin_length))

    def source(self, pos: int) -> int:
        """The source offset of `pos` (inside a changed segment: just after it)."""
        at = bisect_right(self.starts, pos) - 1
        if at < 0:
            return pos
        start, length, origin, origin_length = self.segments[at]
        if pos < start + length:
            return origin if pos == start else origin + origin_length
        return origin + origin_length + (pos - start - length)


def fold(piece: str, base: int, origin: int, shifts: Shifts) -> str:
    """`piece` (at `origin` in the original, at `base` in the folded text) with each character
    in its `char_form`, and the expanded ones recorded in `shifts`."""
    if piece.isascii():  # most slices of most texts: only a backtick to change
        return piece.replace("`", "'")
    table: dict[int, str] = {}
    longer: dict[str, str] = {}
    for char in set(OTHER_THAN_ASCII.findall(piece)) | {"`"}:
        form = char_form(char)
        if form == char:
            continue
        if len(form) == 1:
            table[ord(char)] = form
        elif form:
            longer[char] = form
    folded = piece
    if table:  # a regex over the few characters to change: translate() visits every one
        chars = re.compile("[" + re.escape("".join(map(chr, table))) + "]")
        folded = chars.sub(lambda m: table[ord(m.group())], piece)
    if not longer:
        return folded
    parts, last, shift = [], 0, 0
    for m in re.finditer("[" + re.escape("".join(longer)) + "]", folded):
        form = longer[m.group()]
        parts += [folded[last : m.start()], form]
        shifts.add(base + m.start() + shift, len(form), origin + m.start(), 1)
        shift += len(form) - 1
        last = m.end()
    parts.append(folded[last:])
    return "".join(parts)


def lower(piece: str) -> str:
    """Lower case, one character to one."""
    if DOTTED_I in piece:
        piece = piece.replace(DOTTED_I, "i")
    lowered = piece.lower()
    return lowered if len(lowered) == len(piece) else piece


def collapse(piece: str, base: int, origin: int, shifts: Shifts) -> str:
    """`piece` with each run of whitespace as one space (longer runs recorded in `shifts`)."""
    for space in OTHER_SPACES:  # str.replace: faster than any regex or translate
        if space in piece:
            piece = piece.replace(space, " ")
    parts, last, shift = [], 0, 0
    for m in SPACES.finditer(piece):
        parts += [piece[last : m.start()], " "]
        shifts.add(base + m.start() - shift, 1, origin + m.start(), m.end() - m.start())
        shift += m.end() - m.start() - 1
        last = m.end()
    if not parts:
        return piece
    parts.append(piece[last:])
    return "".join(parts)


@dataclass
class Normalised:
    """`text` normalised for matching; `folded` and `collapsed` lead its offsets back."""

    text: str
    folded: Shifts
    collapsed: Shifts

    @classmethod
    def steps(cls, original: str) -> Generator[None, None, Normalised]:
        """Build it slice by slice, yielding between slices."""
        folded, collapsed = Shifts(), Shifts()
        pieces: list[str] = []
        at, folded_length, length = 0, 0, 0
        spaced = False  # whether the text so far ends with a space
        while at < len(original):
            end = min(len(original), at + SLICE)
            piece = lower(fold(original[at:end], folded_length, at, folded))
            base = folded_length
            folded_length += len(piece)
            if spaced:  # a run of spaces across two slices: the space is already there
                rest = piece.lstrip()
                if len(rest) < len(piece):
                    collapsed.add(length, 0, base, len(piece) - len(rest))
                    base, piece = base + len(piece) - len(rest), rest
            piece = collapse(piece, length, base, collapsed)
            if piece:
                pieces.append(piece)
                length += len(piece)
                spaced = piece.endswith(" ")
            at = end
            yield
        return cls("".join(pieces), folded, collapsed)

    @classmethod
    def of(cls, original: str) -> Normalised:
        return run(cls.steps(original))

    def source(self, pos: int) -> int:
        """The original offset of `pos` in `text`."""
        return self.folded.source(self.collapsed.source(pos))


def run(steps: Generator[None, None, T]) -> T:
    """Run stepwise work through, without pausing."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return cast(T, done.value)
