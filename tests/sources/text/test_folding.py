"""The normalised text a quote check searches (sources/text/folding.py) and the stepwise check
(sources/text/quotes.check): offsets lead back into the original across slices, and the work is
done in steps of bounded size, so a caller can pause between them or stop at a deadline."""

from __future__ import annotations

import random

import pytest

from knowledge_mcp.sources.text.quoting.folding import SLICE, Normalised
from knowledge_mcp.sources.text.quoting.quotes import (
    Closest,
    QuoteMatch,
    check,
    clean_quote,
    find_quote,
    normalise,
)

PIECES = [
    "word",
    "Word",
    "\ufb01ne",
    "\u201cquoted\u201d",
    "en\u2013dash",
    "\u00a0",
    " ",
    "\n\n",
    "   ",
    "\t",
    "\u2026",
]


def random_text(seed: int, size: int) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    while sum(map(len, parts)) < size:
        parts.append(rng.choice(PIECES))
        parts.append(" " if rng.random() < 0.7 else "")
    return "".join(parts)


def test_the_normalised_text_is_the_reference_normalisation_of_the_original() -> None:
    text = random_text(1, 3 * SLICE)
    assert Normalised.of(text).text.strip(" ") == normalise(text)


@pytest.mark.parametrize("seed", range(8))
def test_a_found_passage_maps_back_to_original_text_that_normalises_to_the_quote(seed: int) -> None:
    text = random_text(seed, 3 * SLICE)  # runs of spaces and expansions across slice boundaries
    rng = random.Random(seed)
    for _ in range(20):
        start = rng.randrange(len(text) - 200)
        original = text[start : start + rng.randrange(20, 200)]
        quote = normalise(original).upper()
        if not quote.strip():
            continue
        match = find_quote(text, quote)
        assert match is not None, quote
        assert normalise(text[match.start : match.end]) == normalise(clean_quote(quote))


def test_whitespace_across_a_slice_boundary_collapses_to_one_space() -> None:
    text = "a" * (SLICE - 2) + " \n\n \t " + "b" * 10
    normalised = Normalised.of(text)
    assert normalised.text == "a" * (SLICE - 2) + " " + "b" * 10
    at = normalised.text.find("b")
    assert text[normalised.source(at)] == "b" and normalised.source(at - 1) == SLICE - 2


def steps_of(text: str, quote: str) -> tuple[int, QuoteMatch | Closest | None]:
    work, steps = check(text, quote), 0
    while True:
        try:
            next(work)
        except StopIteration as done:
            return steps, done.value
        steps += 1


@pytest.mark.parametrize(
    "text, quote",
    [
        ("word " * 60_000, "WORD " * 599 + "zebra"),  # every place starts a long near-match
        ("a" * 300_000, "a" * 2_999 + "b"),
        ("lorem ipsum " * 25_000, "\ufdfa" * 270),  # expands to 4,860 characters
        (" \n" * 150_000, "some words"),
    ],
)
def test_an_adversarial_check_runs_in_steps_proportional_to_the_text(text: str, quote: str) -> None:
    steps, outcome = steps_of(text, quote)
    assert not isinstance(outcome, QuoteMatch)
    # one pass folding the text a slice at a time, two searching it, then the closest passage
    assert len(text) // SLICE <= steps <= 2 * len(text) // SLICE + 200
