"""A phrase found in its words' blocks as arrays counts what the per-chunk reference counts (pure)."""

from __future__ import annotations

import random

import numpy as np

from knowledge_mcp.sources.storage.postgres.phrase_match import Row, postings, starts, within
from knowledge_mcp.sources.storage.postgres.tokens import TITLE_BASE, index, phrase_starts

WORDS = ["the", "to", "and", "fern", "water"]


def chunks(seed: int, n: int) -> list[tuple[str, str]]:
    """`n` chunks of (title, body) over a tiny vocabulary, so phrases recur, also in titles."""
    rng = random.Random(seed)
    return [
        (
            " ".join(rng.choices(WORDS, k=rng.randint(0, 4))),
            " ".join(rng.choices(WORDS, k=rng.randint(1, 40))),
        )
        for _ in range(n)
    ]


def blocks(postings_of_word: list[tuple[int, int, int, str]], ids: list[int], size: int) -> list[Row]:
    """A word's postings as `BLOCKS_SQL` rows of at most `size` chunks, chunk ids `ids`."""
    rows: list[Row] = []
    for start in range(0, len(postings_of_word), size):
        part = postings_of_word[start : start + size]
        rows.append(
            (
                ",".join(str(ids[c]) for c, _, _, _ in part),
                ",".join(str(1000 + ids[c]) for c, _, _, _ in part),
                ",".join(str(10 + c) for c, _, _, _ in part),
                ",".join(str(t) for _, t, _, _ in part),
                ",".join(str(b) for _, _, b, _ in part),
                [p for _, _, _, p in part],
            )
        )
    return rows


def test_the_arrays_count_every_phrase_as_the_per_chunk_reference_does() -> None:
    found = 0
    for seed in range(6):
        texts = chunks(seed, 60)
        indexed = index(texts)
        ids = [7 + 3 * n for n in range(len(texts))]  # ascending, with gaps, as chunk rowids are
        by_word = {w: postings(blocks(indexed.postings[w], ids, size=8)) for w in WORDS}
        positions = {
            w: {c: {int(p) for p in text.split(",")} for c, _, _, text in indexed.postings[w]} for w in WORDS
        }
        rng = random.Random(seed)
        for _ in range(20):
            phrase = rng.choices(WORDS, k=rng.randint(2, 4))
            expected = []
            for c in range(len(texts)):
                if all(c in positions[w] for w in phrase):
                    in_title, in_body = phrase_starts([positions[w][c] for w in phrase])
                    if in_title or in_body:
                        expected.append((ids[c], 1000 + ids[c], in_title, in_body, 10 + c))
            assert starts(phrase, by_word) == expected, phrase
            found += len(expected)
    assert found > 100  # the phrases do occur, in titles and bodies


def test_a_phrase_never_runs_from_the_title_into_the_body_or_the_next_chunk() -> None:
    # "water" ends the title and "fern" starts the body; chunk 2 starts with "fern" after chunk 1's "water"
    indexed = index([("to water", "fern the"), ("", "the water"), ("", "fern")])
    by_word = {w: postings(blocks(indexed.postings[w], [1, 2, 3], size=2)) for w in ("water", "fern")}
    assert starts(["water", "fern"], by_word) == []
    assert TITLE_BASE < 0


def test_only_the_kept_chunks_are_read_and_a_window_keeps_its_own_range() -> None:
    indexed = index([("", "the fern"), ("", "the fern"), ("", "the fern")])
    rows = {w: blocks(indexed.postings[w], [5, 6, 7], size=2) for w in ("the", "fern")}
    keep = np.asarray([6], dtype=np.int64)
    by_word = {"the": postings(rows["the"], keep), "fern": postings(rows["fern"])}
    assert [h[0] for h in starts(["the", "fern"], by_word)] == [6]
    every = {w: postings(rows[w]) for w in rows}
    assert [h[0] for h in within(starts(["the", "fern"], every), 6, 8)] == [6, 7]
