"""Is this quote in that text? Matching a quote the way a person reads it (pure).

A quote copied out of a result rarely matches byte for byte: line breaks were collapsed, a
client curled the quotation marks or straightened them, an en dash became a hyphen, a PDF's
"ﬁ" ligature became "fi", the case changed at the start of a sentence. `find_quote` matches
after normalising exactly those (`NORMALISATIONS`) and says which ones it needed;
`closest_passage` names the passage most like a quote that is not there, with a similarity.

Both take time linear in the text and the quote: the text is normalised once, in C-speed
passes (`folding.Normalised`), the quote the same way, and the match is one `str.find` of the
one in the other; the closest passage is placed, aligned and compared in bounded steps
(`nearest.py`). Each is stepwise (`check`: a generator yielding between slices of work), so a
server can pause between steps and stop at a deadline; `find_quote` and `closest_passage` run
them through.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Generator
from dataclasses import dataclass

from . import nearest
from .folding import DASH_TABLE, DOUBLE_QUOTES, QUOTE_TABLE, SLICE, Normalised, run

NORMALISATIONS = ("whitespace", "quotes", "dashes", "unicode", "case")
"""What a match may have needed, in the order reported: collapsed whitespace, Unicode quotation
marks as ' and ", dashes and minus signs as -, NFKC compatibility forms (ligatures, full-width
letters, no-break spaces, "…"), and case."""

# What a snippet adds around a quote copied from it, and marks a client may wrap it in.
EDGES = " \t\r\n\u00a0…\"'\u2018\u2019\u201a\u201b" + DOUBLE_QUOTES
FIND_WINDOW = SLICE * 16
"""Characters searched between two pauses."""


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
    return run(needed_steps(found, quote))


def needed_steps(found: str, quote: str) -> Generator[None, None, tuple[str, ...]]:
    if found == quote:
        return ()
    every = frozenset(NORMALISATIONS)
    steps = []
    for step in NORMALISATIONS:
        if normalise(found, every - {step}) != normalise(quote, every - {step}):
            steps.append(step)
        yield
    # A difference two steps both remove (a no-break space: NFKC or whitespace) needs neither
    # alone; it is a space all the same.
    return tuple(steps) or ("whitespace",)


def quote_form(quote: str) -> str:
    """The quote as it is looked for: cleaned (`clean_quote`) and normalised as the text is."""
    return Normalised.of(clean_quote(quote)).text.strip()


def find_in(text: str, needle: str) -> Generator[None, None, int]:
    """`text.find(needle)`, a window at a time."""
    at = 0
    while at < len(text):
        found = text.find(needle, at, at + FIND_WINDOW + len(needle) - 1)
        if found >= 0:
            return found
        at += FIND_WINDOW
        yield
    return -1


def matched(text: str, normalised: Normalised, quote: str) -> Generator[None, None, QuoteMatch | None]:
    """Where the (cleaned) `quote` occurs in `text` after normalising both, or None."""
    target = quote_form(quote)
    at = (yield from find_in(normalised.text, target)) if target else -1
    if at < 0:
        return None
    start, end = normalised.source(at), normalised.source(at + len(target))
    yield
    return QuoteMatch(start, end, (yield from needed_steps(text[start:end], quote)))


def check(text: str, quote: str) -> Generator[None, None, QuoteMatch | Closest | None]:
    """Stepwise: where `quote` occurs in `text` (a `QuoteMatch`), else the closest passage (a
    `Closest`), else None (not one word of it occurs)."""
    quote = clean_quote(quote)
    if not quote:
        return None
    at = yield from find_in(text, quote)
    if at >= 0:
        return QuoteMatch(at, at + len(quote), ())
    normalised = yield from Normalised.steps(text)
    match = yield from matched(text, normalised, quote)
    if match is not None:
        return match
    return (yield from nearest_steps(normalised, quote))


def nearest_steps(normalised: Normalised, quote: str) -> Generator[None, None, Closest | None]:
    found = yield from nearest.closest(normalised.text, quote_form(quote))
    if found is None:
        return None
    start, end, similarity = found
    return Closest(normalised.source(start), normalised.source(end), similarity)


def find_quote(text: str, quote: str) -> QuoteMatch | None:
    """Where `quote` (cleaned: `clean_quote`) occurs in `text`, exactly or after the
    normalisations it needed; None when it does not occur."""
    quote = clean_quote(quote)
    if not quote:
        return None
    at = text.find(quote)
    if at >= 0:
        return QuoteMatch(at, at + len(quote), ())
    return run(matched(text, Normalised.of(text), quote))


def closest_passage(text: str, quote: str) -> Closest | None:
    """The passage of `text` most like `quote` and how alike they are (0..1: `nearest.py`);
    None when no word of the quote occurs in the text. The passage runs from where the quote's
    first word falls to where its last does: a changed first or last word is still inside."""
    return run(nearest_steps(Normalised.of(text), quote))
