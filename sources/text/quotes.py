"""Is this quote in that text? Matching a quote the way a person reads it (pure).

A quote copied out of a result rarely matches byte for byte: line breaks were collapsed, a
client curled the quotation marks or straightened them, an en dash became a hyphen, a PDF's
"ﬁ" ligature became "fi", the case changed at the start of a sentence. `find_quote` matches
after normalising exactly those (`NORMALISATIONS`) and says which ones it needed;
`closest_passage` names the passage most like a quote that is not there, with a similarity.

Both run over a long text in C-speed passes (`str.translate`, one compiled regex): the text is
folded one character to one character wherever it can be (so offsets carry over unchanged), and
only characters that NFKC expands (ligatures, "…") shift them (`Folded.original`).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from difflib import SequenceMatcher
from math import log

NORMALISATIONS = ("whitespace", "quotes", "dashes", "unicode", "case")
"""What a match may have needed, in the order reported: collapsed whitespace, Unicode quotation
marks as ' and ", dashes and minus signs as -, NFKC compatibility forms (ligatures, full-width
letters, no-break spaces, "…"), and case."""

SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2032\u2035`\u00b4"
DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb"
DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
QUOTE_TABLE = {ord(c): "'" for c in SINGLE_QUOTES} | {ord(c): '"' for c in DOUBLE_QUOTES}
DASH_TABLE = {ord(c): "-" for c in DASHES}
# What a snippet adds around a quote copied from it, and marks a client may wrap it in.
EDGES = " \t\r\n\u00a0…\"'\u2018\u2019\u201a\u201b" + DOUBLE_QUOTES
WORD = re.compile(r"\w+")
# Words found more often than this in a text are too common to place the closest passage.
COMMON_HITS = 5000
# How many of a quote's words (the longest) place its closest passage.
PLACING_WORDS = 8


@dataclass(frozen=True)
class Span:
    """Where in the text: character offsets [start, end)."""

    start: int
    end: int


@dataclass(frozen=True)
class QuoteMatch(Span):
    normalisations: tuple[str, ...]


@dataclass(frozen=True)
class Closest(Span):
    similarity: float


def clean_quote(quote: str) -> str:
    """The quote without what surrounds a copy of it: spaces, quotation marks, ellipses."""
    cleaned = quote.strip(EDGES)
    while cleaned.startswith("...") or cleaned.endswith("..."):
        cleaned = cleaned.removeprefix("...").removesuffix("...").strip(EDGES)
    return cleaned


def normalise(text: str, steps: tuple[str, ...] | frozenset[str] = NORMALISATIONS) -> str:
    """`text` with the named normalisations applied (a reference form, for short strings)."""
    if "unicode" in steps:
        text = unicodedata.normalize("NFKC", text)
    if "quotes" in steps:
        text = text.translate(QUOTE_TABLE)
    if "dashes" in steps:
        text = text.translate(DASH_TABLE)
    if "case" in steps:
        text = text.lower()  # not casefold(): it would also undo ligatures (ﬁ → fi)
    if "whitespace" in steps:
        text = " ".join(text.split())
    return text


def needed(found: str, quote: str) -> tuple[str, ...]:
    """Which normalisations make `quote` equal to the text `found` for it: those without which
    the two differ."""
    if found == quote:
        return ()
    every = frozenset(NORMALISATIONS)
    steps = tuple(s for s in NORMALISATIONS if normalise(found, every - {s}) != normalise(quote, every - {s}))
    # A difference two steps both remove (a no-break space: NFKC or whitespace) needs neither
    # alone; it is a space all the same.
    return steps or ("whitespace",)


def _char_form(char: str) -> str:
    """One character as the search sees it: NFKC, quotes and dashes plain."""
    if char.isspace():
        return char  # the pattern matches any run of spaces (`quote_pattern`)
    return unicodedata.normalize("NFKC", char).translate(QUOTE_TABLE).translate(DASH_TABLE)


@dataclass(frozen=True)
class Folded:
    """A text folded for matching, and the way back to the original's offsets.

    `expansions` are (start in `text`, length, original offset) of each character NFKC made
    longer; every other character kept its place, shifted by the expansions before it."""

    text: str
    expansions: tuple[tuple[int, int, int], ...] = ()

    @classmethod
    def of(cls, text: str) -> Folded:
        table: dict[int, str] = {}
        longer: dict[str, str] = {}
        for char in set(text):
            if char.isascii() and char != "`":
                continue
            form = _char_form(char)
            if form == char:
                continue
            if len(form) == 1:
                table[ord(char)] = form
            elif form:
                longer[char] = form
        folded = text
        if table:  # a regex over the few characters to change: translate() visits every one
            chars = re.compile("[" + re.escape("".join(map(chr, table))) + "]")
            folded = chars.sub(lambda m: table[ord(m.group())], text)
        if not longer:
            return cls(folded)
        parts, expansions, last, shift = [], [], 0, 0
        for m in re.finditer("[" + re.escape("".join(longer)) + "]", folded):
            form = longer[m.group()]
            parts += [folded[last : m.start()], form]
            expansions.append((m.start() + shift, len(form), m.start()))
            shift += len(form) - 1
            last = m.end()
        parts.append(folded[last:])
        return cls("".join(parts), tuple(expansions))

    def original(self, pos: int) -> int:
        """The original offset of folded offset `pos` (inside an expansion: just after it)."""
        at = bisect_right(self.expansions, (pos, len(self.text) + 1, 0)) - 1
        if at < 0:
            return pos
        start, length, origin = self.expansions[at]
        if pos == start:
            return origin
        if pos < start + length:
            return origin + 1
        return origin + 1 + (pos - start - length)

    def span(self, start: int, end: int) -> Span:
        return Span(self.original(start), self.original(end))


def quote_pattern(quote: str) -> re.Pattern[str]:
    """A regex finding the folded `quote` in a folded text: any run of whitespace for a space,
    case ignored."""
    words = [re.escape("".join(_char_form(c) for c in word)) for word in quote.split()]
    return re.compile(r"\s+".join(words), re.IGNORECASE)


def find_quote(text: str, quote: str, folded: Folded | None = None) -> QuoteMatch | None:
    """Where `quote` (cleaned: `clean_quote`) occurs in `text`, exactly or after the
    normalisations it needed; None when it does not occur. `folded`: `Folded.of(text)`, when
    the caller has it already."""
    quote = clean_quote(quote)
    if not quote:
        return None
    at = text.find(quote)
    if at >= 0:
        return QuoteMatch(at, at + len(quote), ())
    folded = folded or Folded.of(text)
    m = quote_pattern(quote).search(folded.text)
    if m is None:
        return None
    span = folded.span(m.start(), m.end())
    return QuoteMatch(span.start, span.end, needed(text[span.start : span.end], quote))


def _positions(text: str, word: str) -> list[int]:
    found, at = [], text.find(word)
    while at >= 0:
        found.append(at)
        at = text.find(word, at + 1)
    return found


def _best_window(folded: str, words: list[str], width: int) -> int | None:
    """The folded offset where a window of `width` characters holds the most of `words`, or
    None when none of them occurs. The quote's longest words place it (`PLACING_WORDS`, rarer
    ones weigh more; those found over `COMMON_HITS` times only when nothing rarer is), each
    found with `str.find`: a few passes over the text at C speed."""
    lowered = folded.lower()
    if len(lowered) != len(folded):  # a rare letter whose lower case is longer: keep the case
        lowered = folded
    placing = sorted({w.lower() for w in words}, key=len, reverse=True)[:PLACING_WORDS]
    counts = {w: lowered.count(w) for w in placing}
    usable = [w for w in placing if 0 < counts[w] <= COMMON_HITS]
    if not usable:
        present = [w for w in placing if counts[w]]
        if not present:
            return None
        usable = [min(present, key=lambda w: counts[w])]
    hits = sorted((pos, 1.0 / log(2 + counts[w])) for w in usable for pos in _positions(lowered, w))
    best, best_at, total, first = -1.0, hits[0][0], 0.0, 0
    for pos, weight in hits:
        total += weight
        while hits[first][0] < pos - width:
            total -= hits[first][1]
            first += 1
        if total > best:
            best, best_at = total, hits[first][0]
    return best_at


def closest_passage(text: str, quote: str, folded: Folded | None = None) -> Closest | None:
    """The passage of `text` most like `quote`, and how alike they are (difflib's ratio of the
    normalised forms, 0..1); None when no word of the quote occurs in the text.

    The quote's words are aligned with the words around its best window (difflib's matching
    blocks), and the passage runs from where the quote's first word falls to where its last
    does: a changed first or last word is still inside it."""
    quote = clean_quote(quote)
    target = normalise(quote)
    words = WORD.findall(target)
    folded = folded or Folded.of(text)
    at = _best_window(folded.text, words, len(target)) if words else None
    if at is None:
        return None
    region_start = max(0, at - len(target))
    region = folded.text[region_start : at + 2 * len(target)]
    found = list(WORD.finditer(region))
    blocks = [
        b
        for b in SequenceMatcher(
            None, words, [m.group().lower() for m in found], autojunk=False
        ).get_matching_blocks()
        if b.size
    ]
    if not blocks:
        return None
    first = max(0, blocks[0].b - blocks[0].a)
    last = min(len(found), blocks[-1].b + blocks[-1].size + len(words) - blocks[-1].a - blocks[-1].size) - 1
    last = max(first, last)
    start, end = region_start + found[first].start(), region_start + found[last].end()
    ratio = SequenceMatcher(None, target, normalise(folded.text[start:end]), autojunk=False).ratio()
    span = folded.span(start, end)
    return Closest(span.start, span.end, round(ratio, 3))
