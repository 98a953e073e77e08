"""Retrieval modes under a token budget: resolve_budget, chunk_window, full_window, the token count."""

from __future__ import annotations

import pytest

from knowledge_mcp.sources.errors import InvalidArgumentError
from knowledge_mcp.sources.models import Retrieval
from knowledge_mcp.sources.retrieval import (
    Budget,
    Defaults,
    Span,
    chunk_window,
    full_window,
    resolve_budget,
    with_default_mode,
)
from knowledge_mcp.sources.text.tokens import TokenCounter

DEFAULTS = Defaults()


def budget(max_tokens: int = 100, chars_per_token: int = 1, sibling_window: int = 2) -> Budget:
    return Budget("chunk_with_siblings", 300, max_tokens, chars_per_token, sibling_window)


def equal_chunks(count: int, size: int) -> tuple[str, list[Span]]:
    """`count` chunks of `size` characters each, words separated by spaces."""
    word = ("w" * (size - 1)) + " "
    return word * count, [Span(i * size, (i + 1) * size) for i in range(count)]


# (retrieval, expected mode)
MODE_CASES = [
    (None, "snippet"),
    (Retrieval(), "snippet"),
    (Retrieval(mode="auto"), "snippet"),
    (Retrieval(mode="auto", snippet_length=100), "snippet"),
    (Retrieval(mode="auto", max_tokens=500), "chunk_with_siblings"),
    (Retrieval(mode="auto", max_tokens=100), "chunk_with_siblings"),
    (Retrieval(mode="chunk"), "chunk"),
    (Retrieval(mode="full", max_tokens=500), "full"),
    (Retrieval(mode="snippet", max_tokens=500), "snippet"),
]


@pytest.mark.parametrize(("retrieval", "mode"), MODE_CASES)
def test_auto_becomes_chunk_with_siblings_only_when_max_tokens_is_given(
    retrieval: Retrieval | None, mode: str
) -> None:
    assert resolve_budget(retrieval, DEFAULTS, []).mode == mode


def test_defaults_apply_when_nothing_is_given() -> None:
    warnings: list[str] = []
    b = resolve_budget(
        None, Defaults(snippet_length=200, max_tokens=1000, chars_per_token=3, sibling_window=1), warnings
    )
    assert (b.snippet_length, b.max_tokens, b.chars_per_token, b.sibling_window) == (200, 1000, 3, 1)
    assert b.max_chars == 3000
    assert warnings == []


# (retrieval knobs, field named in the warning, clamped value)
CLAMP_CASES = [
    ({"max_tokens": 100_000}, "retrieval.max_tokens", "max_tokens", 32000),
    ({"chars_per_token": 0}, "retrieval.chars_per_token", "chars_per_token", 1),
    ({"chars_per_token": 11}, "retrieval.chars_per_token", "chars_per_token", 10),
    ({"sibling_window": -1}, "retrieval.sibling_window", "sibling_window", 0),
    ({"sibling_window": 21}, "retrieval.sibling_window", "sibling_window", 20),
    ({"snippet_length": 5}, "snippet_length", "snippet_length", 50),
    ({"snippet_length": 5000}, "snippet_length", "snippet_length", 1000),
]


@pytest.mark.parametrize(("knobs", "field", "attribute", "value"), CLAMP_CASES)
def test_out_of_range_knobs_are_clamped_and_reported(
    knobs: dict[str, int], field: str, attribute: str, value: int
) -> None:
    warnings: list[str] = []
    b = resolve_budget(Retrieval(**knobs), DEFAULTS, warnings)
    assert getattr(b, attribute) == value
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{field} {next(iter(knobs.values()))} is outside")
    assert warnings[0].endswith(f"used {value}")


def test_every_clamp_is_reported_once() -> None:
    warnings: list[str] = []
    resolve_budget(
        Retrieval(max_tokens=99_999, chars_per_token=99, sibling_window=99, snippet_length=1),
        DEFAULTS,
        warnings,
    )
    assert len(warnings) == 4


@pytest.mark.parametrize("max_tokens", [0, 1, 49])
def test_a_max_tokens_under_the_least_an_answer_needs_is_refused_not_raised(max_tokens: int) -> None:
    with pytest.raises(InvalidArgumentError, match=r"retrieval\.max_tokens: must be 50\.\.32000"):
        resolve_budget(Retrieval(max_tokens=max_tokens), DEFAULTS, [])


def test_in_range_knobs_are_used_as_given_without_warnings() -> None:
    warnings: list[str] = []
    b = resolve_budget(
        Retrieval(max_tokens=50, chars_per_token=10, sibling_window=0, snippet_length=1000),
        DEFAULTS,
        warnings,
    )
    assert (b.max_tokens, b.chars_per_token, b.sibling_window, b.snippet_length) == (50, 10, 0, 1000)
    assert warnings == []


@pytest.mark.parametrize(
    ("text", "cpt", "tokens"),
    [
        ("", 4, 0),
        ("a", 4, 1),
        ("abcd", 4, 1),
        ("abcde", 4, 2),
        ("x" * 401, 4, 101),
        ("abc", 1, 3),
        ("abc", 0, 3),
    ],
)
def test_a_chars_per_token_count_is_the_ceiling_of_chars_over_chars_per_token(
    text: str, cpt: int, tokens: int
) -> None:
    assert TokenCounter(cpt).count(text) == tokens


# (max_chars, sibling_window, anchor, expected first and last chunk) for 9 chunks of 10 chars
WINDOW_CASES = [
    (10, 2, 4, (4, 4)),
    (20, 2, 4, (4, 5)),  # room for one sibling: right first
    (30, 2, 4, (3, 5)),
    (40, 2, 4, (3, 6)),
    (50, 2, 4, (2, 6)),
    (1000, 2, 4, (2, 6)),
    (1000, 0, 4, (4, 4)),
    (1000, 1, 4, (3, 5)),
    (1000, 20, 4, (0, 8)),
    (30, 2, 0, (0, 2)),  # nothing on the left: the budget goes right
    (30, 2, 8, (6, 8)),
    (1000, 2, -5, (0, 2)),  # anchors outside the item are clamped
    (1000, 2, 99, (6, 8)),
]


@pytest.mark.parametrize(("max_chars", "sibling_window", "anchor", "expected"), WINDOW_CASES)
def test_chunk_window_grows_around_the_anchor_within_budget_and_sibling_window(
    max_chars: int, sibling_window: int, anchor: int, expected: tuple[int, int]
) -> None:
    text, chunks = equal_chunks(9, 10)
    window = chunk_window(text, chunks, anchor, budget(max_chars, 1, sibling_window), siblings=True)
    assert (window.first_chunk, window.last_chunk) == expected
    assert (window.start, window.end) == (chunks[expected[0]].start, chunks[expected[1]].end)
    assert window.end - window.start <= max_chars
    assert window.truncated is False


# (max_chars, anchor, expected (start, end)) for 9 chunks of 10 chars, sibling_window 2
FILL_CASES = [
    (19, 4, (40, 59)),  # the next chunk's word up to its space
    (25, 4, (40, 65)),  # chunks 4-5, then half a word of chunk 6 (no space within reach)
]


@pytest.mark.parametrize(("max_chars", "anchor", "expected"), FILL_CASES)
def test_chunk_window_takes_part_of_a_right_neighbour_that_does_not_fit_whole(
    max_chars: int, anchor: int, expected: tuple[int, int]
) -> None:
    text, chunks = equal_chunks(9, 10)
    window = chunk_window(text, chunks, anchor, budget(max_chars, 1, 2), siblings=True)
    assert (window.start, window.end) == expected
    assert window.truncated is True  # read on from window.end


def test_chunk_mode_never_takes_part_of_a_neighbour() -> None:
    text, chunks = equal_chunks(9, 10)
    window = chunk_window(text, chunks, 4, budget(19, 1, 2), siblings=False)
    assert (window.start, window.end, window.truncated) == (40, 50, False)


def test_chunk_window_grows_symmetrically_when_the_budget_allows() -> None:
    text, chunks = equal_chunks(21, 10)
    for n in range(0, 11):
        window = chunk_window(text, chunks, 10, budget(1000, 1, n), siblings=True)
        assert (10 - window.first_chunk, window.last_chunk - 10) == (n, n)


def test_chunk_mode_returns_only_the_anchor() -> None:
    text, chunks = equal_chunks(5, 10)
    window = chunk_window(text, chunks, 2, budget(1000), siblings=False)
    assert (window.first_chunk, window.last_chunk, window.start, window.end) == (2, 2, 20, 30)


def test_chunk_window_with_uneven_chunks_never_exceeds_the_budget() -> None:
    sizes = [5, 50, 3, 40, 7, 7, 90, 1, 30, 12]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    chunks = [Span(s, s + n) for s, n in zip(starts, sizes, strict=True)]
    text = "x" * sum(sizes)
    for max_chars in range(1, 260, 7):
        for anchor in range(len(chunks)):
            window = chunk_window(text, chunks, anchor, budget(max_chars, 1, 20), siblings=True)
            assert window.end - window.start <= max_chars
            assert window.first_chunk <= anchor <= window.last_chunk or window.truncated


def test_overlapping_chunks_are_joined_without_counting_the_overlap_twice() -> None:
    text = "abcdefghij" * 3
    chunks = [Span(0, 12), Span(10, 22), Span(20, 30)]
    window = chunk_window(text, chunks, 1, budget(30, 1, 1), siblings=True)
    assert (window.start, window.end, window.first_chunk, window.last_chunk) == (0, 30, 0, 2)


def test_an_anchor_larger_than_the_budget_is_truncated_at_a_word() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta"
    window = chunk_window(text, [Span(0, len(text))], 0, budget(20, 1), siblings=True)
    assert window.truncated is True
    assert (window.first_chunk, window.last_chunk) == (0, 0)
    assert window.end - window.start <= 20
    assert text[window.start : window.end] == "alpha beta gamma"


def test_an_anchor_without_spaces_is_truncated_hard_at_the_budget() -> None:
    text = "x" * 100
    window = chunk_window(text, [Span(0, 100)], 0, budget(30, 1), siblings=True)
    assert (window.start, window.end, window.truncated) == (0, 30, True)


def test_the_token_budget_is_never_exceeded() -> None:
    text, chunks = equal_chunks(30, 37)
    for max_tokens in (50, 60, 100, 333):
        b = budget(max_tokens, 4, 20)
        window = chunk_window(text, chunks, 15, b, siblings=True)
        assert b.counter.count(text[window.start : window.end]) <= max_tokens


@pytest.mark.parametrize("max_chars", [7, 20, 33, 100, 499, 500, 10_000])
def test_full_window_pages_through_the_whole_item_without_gaps_or_overlap(max_chars: int) -> None:
    text = " ".join(f"word{i}" for i in range(100)) + "\nlast line"
    pages: list[str] = []
    offset = 0
    while True:
        window = full_window(text, offset, budget(max_chars, 1))
        assert window.start == offset
        assert 0 < window.end - window.start <= max_chars
        pages.append(text[window.start : window.end])
        if not window.truncated:
            assert window.end == len(text)
            break
        offset = window.end
        assert len(pages) < 10_000
    assert "".join(pages) == text
    assert len(pages) == 1 if max_chars >= len(text) else len(pages) > 1


def test_full_window_cuts_pages_at_spaces_or_newlines() -> None:
    text = "alpha beta\ngamma delta epsilon"
    window = full_window(text, 0, budget(13, 1))
    assert text[window.start : window.end] == "alpha beta"
    assert window.truncated is True


@pytest.mark.parametrize(("offset", "start"), [(-10, 0), (0, 0), (5, 5), (10**6, 11)])
def test_full_window_clamps_the_offset(offset: int, start: int) -> None:
    window = full_window("hello world", offset, budget(100, 1))
    assert (window.start, window.end) == (start, 11)
    assert window.truncated is False
    assert (window.first_chunk, window.last_chunk) == (-1, -1)


@pytest.mark.parametrize(
    "retrieval, expected_mode, expected_max_tokens",
    [
        (None, "full", None),
        (Retrieval(), "full", None),
        (Retrieval(max_tokens=500), "full", 500),
        (Retrieval(mode="snippet"), "snippet", None),
        (Retrieval(mode="chunk", max_tokens=80), "chunk", 80),
        (Retrieval.model_validate({"mode": "auto"}), "auto", None),
    ],
)
def test_a_source_default_mode_applies_only_when_no_mode_is_given(
    retrieval: Retrieval | None, expected_mode: str, expected_max_tokens: int | None
) -> None:
    got = with_default_mode(retrieval, "full")
    assert (got.mode, got.max_tokens) == (expected_mode, expected_max_tokens)
