"""Quote matching (sources/text/quotes.py): which normalisations a quote needs, and the passage
closest to one that is not there."""

from __future__ import annotations

import pytest

from knowledge_mcp.sources.text.quoting.folding import Normalised
from knowledge_mcp.sources.text.quoting.quotes import clean_quote, closest_passage, find_quote, normalise

TEXT = (
    "The \ufb01rst rule of the starter:\n  \u201cnever\u201d feed it cold water \u2014 ever.\n"
    "It\u2019s a well\u2011known fact that rye ferments faster.\u00a0Bake at 250\u00b0C."
)


@pytest.mark.parametrize(
    "quote, found, normalisations",
    [
        ("feed it cold water", "feed it cold water", ()),
        (
            'rule of the starter: "never" feed',
            "rule of the starter:\n  \u201cnever\u201d feed",
            ("whitespace", "quotes"),
        ),
        ("It's a well-known fact", "It\u2019s a well\u2011known fact", ("quotes", "dashes")),
        ("water - ever", "water \u2014 ever", ("dashes",)),
        ("the first rule", "The \ufb01rst rule", ("unicode", "case")),
        ("faster. Bake at", "faster.\u00a0Bake at", ("whitespace",)),
        ("\u2026never\u201d feed it\u2026", "never\u201d feed it", ()),
        ('"rye ferments faster"', "rye ferments faster", ()),
        ("RYE   FERMENTS", "rye ferments", ("whitespace", "case")),
    ],
)
def test_find_quote_matches_after_the_normalisations_it_needed(
    quote: str, found: str, normalisations: tuple[str, ...]
) -> None:
    match = find_quote(TEXT, quote)
    assert match is not None
    assert TEXT[match.start : match.end] == found
    assert match.normalisations == normalisations


@pytest.mark.parametrize(
    "quote",
    ["feed it warm water", "the second rule", "rye ferments slower", "", "  \u2026  "],
)
def test_a_quote_with_a_word_changed_is_not_found(quote: str) -> None:
    assert find_quote(TEXT, quote) is None


def test_the_closest_passage_of_a_changed_quote_is_the_original_with_a_high_similarity() -> None:
    closest = closest_passage(TEXT, "well-known fact that rye ferments slower")
    assert closest is not None
    assert TEXT[closest.start : closest.end] == "well\u2011known fact that rye ferments faster"
    assert 0.8 < closest.similarity < 1.0


def test_the_closest_passage_keeps_a_changed_first_word() -> None:
    closest = closest_passage(TEXT, "zebra rule of the starter")
    assert closest is not None
    assert TEXT[closest.start : closest.end] == "\ufb01rst rule of the starter"


def test_no_closest_passage_when_no_word_of_the_quote_occurs() -> None:
    assert closest_passage(TEXT, "zebra quagga") is None


def test_offsets_after_an_expanded_ligature_point_into_the_original_text() -> None:
    text = "\ufb01ne \ufb02our, then \ufb01nal proof"
    folded = Normalised.of(text)
    assert folded.text == "fine flour, then final proof"
    match = find_quote(text, "final proof")
    assert match is not None and text[match.start : match.end] == "\ufb01nal proof"
    assert match.normalisations == ("unicode",)


@pytest.mark.parametrize(
    "quote, cleaned",
    [
        ("  \u201cnever feed\u201d ", "never feed"),
        ("\u2026 feed it \u2026", "feed it"),
        ("...feed it...", "feed it"),
        ("it\u2019s", "it\u2019s"),
    ],
)
def test_clean_quote_drops_what_surrounds_a_copied_quote(quote: str, cleaned: str) -> None:
    assert clean_quote(quote) == cleaned


@pytest.mark.parametrize(
    "text, steps, normalised",
    [
        ("a \n\t b", ("whitespace",), "a b"),
        ("\u201cx\u201d \u2018y\u2019", ("quotes",), "\"x\" 'y'"),
        ("a\u2013b\u2014c\u2212d", ("dashes",), "a-b-c-d"),
        ("\ufb01\u2026\uff21", ("unicode",), "fi...A"),
        ("MiXeD", ("case",), "mixed"),
        ("\ufb01", ("case",), "\ufb01"),
    ],
)
def test_normalise_applies_each_step(text: str, steps: tuple[str, ...], normalised: str) -> None:
    assert normalise(text, steps) == normalised
