"""chunk_text: sizes, coverage, overlap, boundaries and stable ids over seeded texts."""

from __future__ import annotations

import itertools
import random

import pytest

from knowledge_mcp.sources.storage.records.chunking import Chunk, chunk_text

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "omicron",
    "sigma",
]
SIZE = 2000  # default: 500 tokens x 4 chars
OVERLAP = 300  # default: 75 tokens x 4 chars


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + rng.choice(".!?")


def paragraphs(seed: int, count: int, sentences: tuple[int, int]) -> str:
    rng = random.Random(seed)
    return "\n\n".join(" ".join(sentence(rng) for _ in range(rng.randint(*sentences))) for _ in range(count))


def sentences_only(seed: int, count: int) -> str:
    rng = random.Random(seed)
    return " ".join(sentence(rng) for _ in range(count))


def no_punctuation(seed: int, count: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(count))


TEXTS = {
    "paragraphs": paragraphs(1, 12, (6, 12)),
    "short paragraphs": paragraphs(2, 60, (1, 2)),
    "one long paragraph of sentences": sentences_only(3, 200),
    "giant paragraph without punctuation": no_punctuation(4, 2000),
    "mixed": paragraphs(5, 3, (2, 3)) + "\n\n" + no_punctuation(6, 900) + "\n\n" + sentences_only(7, 60),
}


def assert_covers(text: str, chunks: list[Chunk]) -> None:
    covered = [False] * len(text)
    for chunk in chunks:
        for i in range(chunk.start, chunk.end):
            covered[i] = True
    missing = [i for i, c in enumerate(covered) if not c and not text[i].isspace()]
    assert not missing, (
        f"characters not in any chunk, first at {missing[0]}: {text[missing[0] : missing[0] + 30]!r}"
    )


@pytest.mark.parametrize("name", list(TEXTS))
def test_long_text_becomes_ordered_chunks_within_the_size_covering_everything(name: str) -> None:
    text = TEXTS[name]
    chunks = chunk_text(text)
    assert len(chunks) > 1
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert 0 < chunk.end - chunk.start <= SIZE
        assert chunk.text == text[chunk.start : chunk.end]
    assert chunks[0].start == 0
    assert chunks[-1].end == len(text)
    assert all(b.start > a.start and b.end > a.end for a, b in itertools.pairwise(chunks))
    assert_covers(text, chunks)


@pytest.mark.parametrize("name", list(TEXTS))
def test_consecutive_chunks_overlap(name: str) -> None:
    chunks = chunk_text(TEXTS[name])
    gaps = [(b.index, a.end, b.start) for a, b in itertools.pairwise(chunks) if b.start >= a.end]
    assert not gaps, f"chunks that do not overlap their predecessor (index, previous end, start): {gaps}"


def test_overlap_never_exceeds_the_overlap_budget() -> None:
    chunks = chunk_text(TEXTS["one long paragraph of sentences"])
    for a, b in itertools.pairwise(chunks):
        assert a.end - b.start <= OVERLAP


def test_chunks_end_at_paragraph_or_sentence_ends_when_possible() -> None:
    for name in ("paragraphs", "short paragraphs", "one long paragraph of sentences"):
        text = TEXTS[name]
        for chunk in chunk_text(text)[:-1]:
            assert text[chunk.end - 1] in ".!?", f"{name}: chunk {chunk.index} ends with {chunk.text[-15:]!r}"


def test_chunks_start_at_paragraph_or_sentence_starts_when_possible() -> None:
    text = TEXTS["one long paragraph of sentences"]
    for chunk in chunk_text(text)[1:]:
        assert chunk.text[0].isupper(), f"chunk {chunk.index} starts with {chunk.text[:15]!r}"
        assert text[chunk.start - 2] in ".!?"


def test_a_giant_paragraph_without_punctuation_splits_at_spaces() -> None:
    text = TEXTS["giant paragraph without punctuation"]
    chunks = chunk_text(text)
    assert len(chunks) >= len(text) // SIZE
    for chunk in chunks[:-1]:
        assert text[chunk.end] == " "


def test_a_giant_word_is_cut_hard_at_the_size() -> None:
    text = "x" * 5000
    chunks = chunk_text(text)
    assert [(c.start, c.end) for c in chunks] == [(0, 2000), (2000, 4000), (4000, 5000)]


@pytest.mark.parametrize(
    ("chunk_tokens", "overlap_tokens", "chars_per_token"), [(10, 2, 4), (50, 10, 3), (1, 0, 1)]
)
def test_smaller_sizes_are_respected(chunk_tokens: int, overlap_tokens: int, chars_per_token: int) -> None:
    text = TEXTS["paragraphs"][:3000]
    size = chunk_tokens * chars_per_token
    chunks = chunk_text(text, chunk_tokens, overlap_tokens, chars_per_token)
    assert all(c.end - c.start <= size for c in chunks)
    assert all(b.start > a.start for a, b in itertools.pairwise(chunks))
    assert_covers(text, chunks)


@pytest.mark.parametrize("text", ["Hello.", "A short note\n\nwith two paragraphs.", "x" * SIZE, "  padded  "])
def test_short_text_is_one_chunk_of_the_whole_text(text: str) -> None:
    assert chunk_text(text) == [Chunk(0, 0, len(text), text)]


@pytest.mark.parametrize("text", ["", " ", "\n\n\n", "\t \r\n"])
def test_empty_or_whitespace_text_has_no_chunks(text: str) -> None:
    assert chunk_text(text) == []


def test_chunking_is_deterministic() -> None:
    text = TEXTS["mixed"]
    assert chunk_text(text) == chunk_text(text)


def test_chunk_uuid_is_stable_for_the_same_content_and_item() -> None:
    a = Chunk(0, 0, 5, "hello")
    assert a.uuid("item1") == Chunk(3, 100, 105, "hello").uuid("item1")
    assert a.uuid("item1") != a.uuid("item2")
    assert a.uuid("item1") != Chunk(0, 0, 5, "hellO").uuid("item1")
    assert len(a.uuid("item1")) == 24
    assert all(ch in "0123456789abcdef" for ch in a.uuid("item1"))


def test_editing_one_paragraph_keeps_the_uuids_of_untouched_chunks() -> None:
    text = TEXTS["paragraphs"]
    edited = text.replace(text[-40:], text[-40:].upper())
    before = [c.uuid("n") for c in chunk_text(text)]
    after = [c.uuid("n") for c in chunk_text(edited)]
    assert before[:-1] == after[:-1]
    assert before[-1] != after[-1]


def test_no_chunk_lies_wholly_inside_the_previous_one() -> None:
    text = "First para.\n\nSecond para.\n\n" + "word " * 10
    chunks = chunk_text(text, chunk_tokens=10, overlap_tokens=4, chars_per_token=4)
    nested = [(b.index, b.text) for a, b in itertools.pairwise(chunks) if b.end <= a.end]
    assert not nested, f"chunks repeating part of their predecessor and nothing new: {nested}"
