"""make_snippet and the size-knob clamps: tables of inputs, plus a seeded property run."""

from __future__ import annotations

import random
import re
import sys

import pytest

from knowledge_mcp.sources.text.snippets import (
    ELLIPSIS,
    _cut_end,
    _make_snippet,
    clamp,
    clamp_snippet_length,
    collapse,
    is_collapsed,
    make_snippet,
)

PROSE = (
    "Sourdough needs a lively levain. Mix flour and water first, then rest the dough for an "
    "autolyse of thirty minutes. Add the levain and salt, and fold every half hour. After the "
    "bulk ferment, shape the loaf gently and proof it overnight in the fridge. Bake in a hot "
    "Dutch oven, lid on for twenty minutes, then lid off until the crust is deep brown."
)


def core(snippet: str) -> str:
    return snippet.removeprefix(ELLIPSIS).removesuffix(ELLIPSIS)


def assert_word_boundaries(snippet: str, body: str) -> None:
    """The snippet (without ellipses) is a run of whole words of `body`."""
    text = core(snippet)
    at = body.find(text)
    assert at >= 0, f"{text!r} is not a piece of the text"
    assert at == 0 or body[at - 1] == " ", f"starts inside a word: {text[:20]!r}"
    end = at + len(text)
    assert end == len(body) or body[end] == " ", f"ends inside a word: {text[-20:]!r}"
    assert snippet.startswith(ELLIPSIS) == (at > 0)
    assert snippet.endswith(ELLIPSIS) == (end < len(body))


@pytest.mark.parametrize("length", [50, 60, 75, 100, 150, 200, 299, 300])
@pytest.mark.parametrize("word", ["Sourdough", "autolyse", "salt", "overnight", "Dutch", "brown."])
def test_snippet_fits_its_length_contains_the_match_and_cuts_at_words(word: str, length: int) -> None:
    snippet = make_snippet(PROSE, length, PROSE.index(word))
    assert len(snippet) <= length
    assert word in snippet
    assert_word_boundaries(snippet, PROSE)


@pytest.mark.parametrize("length", [50, 80, 120, 200])
def test_without_a_match_the_snippet_starts_at_the_beginning(length: int) -> None:
    snippet = make_snippet(PROSE, length)
    assert snippet.startswith("Sourdough needs")
    assert snippet.endswith(ELLIPSIS)
    assert len(snippet) <= length
    assert_word_boundaries(snippet, PROSE)


def test_short_text_is_returned_whole_without_ellipses() -> None:
    assert make_snippet("  Short\n\nnote.  ", 50, 9) == "Short note."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\n\nb", "a b"),
        ("  lead and trail  ", "lead and trail"),
        ("tabs\t\tand\r\nCRLF", "tabs and CRLF"),
        ("nbsp\u00a0here", "nbsp here"),
        ("\n\n\n", ""),
    ],
)
def test_whitespace_is_collapsed(text: str, expected: str) -> None:
    assert collapse(text) == expected
    assert make_snippet(text, 300) == expected


def test_every_whitespace_character_but_a_single_space_is_collapsed() -> None:
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert len(spaces) > 20
    for space in spaces:
        assert collapse(f"a{space}b") == "a b", hex(ord(space))
        assert collapse(f"a{space}") == collapse(f"{space}a") == "a", hex(ord(space))
    assert collapse("a  b") == "a b" and collapse("a b") == "a b"


def test_prose_with_single_spaces_gives_the_snippets_it_gives_when_whitespace_needs_collapsing() -> None:
    rng = random.Random(7)
    for _ in range(300):
        words = [
            rng.choice(["w", "Word", "ünï", "x.", "y!", "(z)", "ok,"]) * rng.randint(1, 4) for _ in range(400)
        ]
        text = " ".join(words[: rng.randint(1, 400)])
        at = rng.choice([None, *(m.start() for m in re.finditer(r"\S+", text))])
        length = rng.choice([50, 120, 300])
        # A trailing newline makes the text need collapsing, into the same words at the same places.
        assert make_snippet(text, length, at) == make_snippet(text + "\n", length, at), (text, at, length)


def test_match_position_survives_whitespace_collapsing() -> None:
    text = "\n\n   " + "filler   words\n\n" * 40 + "   the\t\tneedle   here " + "tail words " * 40
    snippet = make_snippet(text, 80, text.index("needle"))
    assert "needle" in snippet
    assert "  " not in snippet and "\n" not in snippet and "\t" not in snippet
    assert len(snippet) <= 80


def test_snippet_prefers_to_start_at_a_sentence() -> None:
    snippet = make_snippet(PROSE, 120, PROSE.index("shape"))
    assert snippet.startswith(ELLIPSIS + "After the bulk ferment")


def test_a_word_longer_than_the_length_is_cut_hard() -> None:
    text = "x" * 500
    snippet = make_snippet(text, 50)
    assert snippet == "x" * 49 + ELLIPSIS


def test_a_long_word_at_the_match_is_cut_but_within_the_length() -> None:
    text = "intro words here. " * 10 + "y" * 400 + " outro words." * 10
    snippet = make_snippet(text, 60, text.index("y"))
    assert len(snippet) <= 60
    assert "y" * 20 in snippet


def test_a_match_in_the_last_words_still_fills_the_snippet() -> None:
    text = "Plenty of earlier context words here " * 20 + "and the meeting ended. Target"
    snippet = make_snippet(text, 80, text.index("Target"))
    assert "Target" in snippet
    assert len(snippet) >= 40, f"a {len(snippet)}-char snippet out of an 80-char budget: {snippet!r}"


@pytest.mark.parametrize("length", [50, 80, 150, 300])
def test_seeded_random_texts_keep_every_snippet_invariant(length: int) -> None:
    rng = random.Random(length)
    for _ in range(400):
        tokens = [
            f"w{i}" + "x" * rng.randint(0, 8) + rng.choice(["", "", "", ".", ",", "!", "?"])
            for i in range(rng.randint(1, 150))
        ]
        seps = [rng.choice([" ", " ", "  ", "\n", "\n\n", "\t "]) for _ in tokens]
        text = rng.choice(["", "  ", "\n"]) + "".join(t + s for t, s in zip(tokens, seps, strict=True))
        starts = [m.start() for m in re.finditer(r"\S+", text)]
        at = rng.choice(starts)
        word = re.match(r"\S+", text[at:]).group(0)  # type: ignore[union-attr]
        snippet = make_snippet(text, length, at)
        assert len(snippet) <= length, (text, at)
        assert word in snippet, (text, at, snippet)
        assert_word_boundaries(snippet, collapse(text))


@pytest.mark.parametrize(
    ("value", "expected", "warned"),
    [
        (None, 300, False),
        (50, 50, False),
        (1000, 1000, False),
        (49, 50, True),
        (0, 50, True),
        (-5, 50, True),
        (1001, 1000, True),
        (10**9, 1000, True),
    ],
)
def test_snippet_length_is_clamped_and_the_clamp_is_reported(
    value: int | None, expected: int, warned: bool
) -> None:
    warnings: list[str] = []
    assert clamp_snippet_length(value, 300, warnings) == expected
    if warned:
        assert warnings == [f"snippet_length {value} is outside 50..1000; used {expected}"]
    else:
        assert warnings == []


def test_clamp_names_the_field_and_appends_to_existing_warnings() -> None:
    warnings = ["earlier"]
    assert clamp("retrieval.sibling_window", 99, 2, 0, 20, warnings) == 20
    assert warnings == ["earlier", "retrieval.sibling_window 99 is outside 0..20; used 20"]


def test_a_long_text_gives_the_same_snippet_as_if_it_were_read_whole() -> None:
    rng = random.Random(5)
    words = [
        "solar",
        "panels",
        "feed",
        "the",
        "grid.",
        "Battery",
        "storage,",
        "however,",
        "lags!\n\nWhy?",
        "Cost",
    ]
    for _ in range(300):
        text = " ".join(
            rng.choice(words) + rng.choice(["", " ", "  ", "\n"]) for _ in range(rng.randint(300, 1500))
        )
        length = rng.choice([50, 120, 300, 1000])
        match_at = rng.choice([None, 0, rng.randrange(len(text)), len(text) - 1])
        assert make_snippet(text, length, match_at) == _make_snippet(text, length, match_at)


def test_a_text_is_told_collapsed_only_when_splitting_and_joining_leaves_it_as_it_is() -> None:
    ascii_texts = [f"a{chr(c)}b" for c in range(0x80)] + ["", " a", "a ", "a  b", "a b c"]
    for text in ascii_texts:
        assert is_collapsed(text) == (" ".join(text.split()) == text), repr(text)
    for text in [f"é{chr(c)}b" for c in range(0x3100)]:  # any other text: never told wrongly
        assert not is_collapsed(text) or " ".join(text.split()) == text, repr(text)


def test_a_text_known_collapsed_gives_the_snippet_it_gives_when_looked_through() -> None:
    rng = random.Random(7)
    words = ["solar", "panels", "feed", "the", "grid.", "Battery", "storage,", "lags!", "Why?", "Coût"]
    for _ in range(300):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(5, 600)))
        assert is_collapsed(text)
        length = rng.choice([50, 120, 300, 1000])
        match_at = rng.choice([None, 0, rng.randrange(len(text)), len(text) - 1])
        assert make_snippet(text, length, match_at, collapsed=True) == make_snippet(text, length, match_at)


def _cut_end_by_definition(text: str, limit: int) -> str:
    """`_cut_end` as defined: the last sentence end of the window if past 60 % of it, else the
    last space past half of it, else a hard cut (every sentence end looked for)."""
    if len(text) <= limit:
        return text
    window = text[: limit + 1]
    ends = [m.end() - 1 for m in re.finditer(r"[.!?。！？][\"')\]]?\s", window)]
    if ends and ends[-1] >= limit * 0.6:
        return window[: ends[-1]].rstrip()
    space = window.rfind(" ")
    return (window[:space] if space > limit * 0.5 else window[:limit]).rstrip()


def test_the_end_is_cut_where_looking_through_the_whole_window_would_cut_it() -> None:
    rng = random.Random(17)
    alphabet = "ab .!?\"')] \n\t。！？x"  # sentence marks, closers and whitespace, close together
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        for limit in range(1, 45):
            assert _cut_end(text, limit) == _cut_end_by_definition(text, limit), (text, limit)
