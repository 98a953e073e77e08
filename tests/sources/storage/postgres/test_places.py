"""A small source's copy counts a phrase in each chunk's title and body from its words' places
(`store/places.py`) as a scan of the chunks' words counts it, whichever word is rarest (pure)."""

from __future__ import annotations

import random

import numpy as np

from knowledge_mcp.sources.storage.postgres.postings import positions
from knowledge_mcp.sources.storage.postgres.store.places import TABLE_SHARE, Places, read_places, starts_of

WORDS = ["the", "to", "fern", "ferny", "water", "heron"]  # by term number: sorted, as a copy's lexemes
WEIGHTS = [40, 20, 6, 2, 8, 1]  # "the" common, "heron" rare: phrases of common and rare words


def chunks(seed: int, n: int) -> list[tuple[list[str], list[str]]]:
    """`n` chunks of (title words, body words)."""
    rng = random.Random(seed)
    return [
        (rng.choices(WORDS, WEIGHTS, k=rng.randint(0, 5)), rng.choices(WORDS, WEIGHTS, k=rng.randint(1, 60)))
        for _ in range(n)
    ]


def places_of(texts: list[tuple[list[str], list[str]]]) -> Places:
    """The copy's places of these chunks, read from one block of `places` bytes per word, as
    `copy.py` reads them."""
    blocks, titles, bodies, chunk_at, sizes = [], [], [], [], []
    for word in WORDS:
        places: list[int] = []
        postings = 0
        for c, (title, body) in enumerate(texts):
            in_title = [at for at, w in enumerate(title) if w == word]
            in_body = [at for at, w in enumerate(body) if w == word]
            if in_title or in_body:
                places += in_title + in_body
                titles.append(len(in_title))
                bodies.append(len(in_body))
                chunk_at.append(c)
                postings += 1
        blocks.append(positions.encode(np.asarray(places, dtype=np.int64)))
        sizes.append(postings)
    ints = [np.asarray(a, dtype=np.int64) for a in (titles, bodies, chunk_at)]
    return read_places(blocks, *ints, sizes, len(texts))


def scanned(texts: list[tuple[list[str], list[str]]], phrase: list[set[str]]) -> tuple[list[int], list[int]]:
    """Each chunk's count of the phrase (a set of words per place) in its title and its body."""

    def count(words: list[str]) -> int:
        return sum(
            all(words[at + i] in allowed for i, allowed in enumerate(phrase))
            for at in range(len(words) - len(phrase) + 1)
        )

    return [count(title) for title, _ in texts], [count(body) for _, body in texts]


def test_a_phrase_is_counted_per_chunk_and_column_as_a_scan_counts_it() -> None:
    texts = chunks(3, 300)
    places = places_of(texts)
    rng = random.Random(4)
    phrases = [["the", "heron"], ["heron", "the"], ["the", "to", "the"], ["to", "to"], ["water", "the"]]
    phrases += [rng.choices(WORDS, k=rng.randint(2, 4)) for _ in range(60)]
    found = 0
    for phrase in phrases:
        numbers = [WORDS.index(w) for w in phrase]
        titles, bodies = places.counts([places.of(n, n + 1) for n in numbers], len(texts))
        expected = scanned(texts, [{w} for w in phrase])
        assert (titles.tolist(), bodies.tolist()) == expected, phrase
        found += sum(expected[0]) + sum(expected[1])
    assert found > 100  # the phrases do occur, in titles too


def test_a_phrase_ending_in_a_prefix_takes_every_word_the_prefix_starts() -> None:
    texts = chunks(5, 200)
    places = places_of(texts)
    ferns = places.of(WORDS.index("fern"), WORDS.index("ferny") + 1)  # "fern*": two terms, sorted together
    for first in ("the", "water", "heron"):
        n = WORDS.index(first)
        titles, bodies = places.counts([places.of(n, n + 1), ferns], len(texts))
        assert (titles.tolist(), bodies.tolist()) == scanned(texts, [{first}, {"fern", "ferny"}])


def test_a_phrase_does_not_run_on_into_the_next_column_or_chunk() -> None:
    texts = [(["heron"], ["water", "heron"]), ([], ["the"]), (["water"], ["fern", "heron"]), ([], [])]
    places = places_of(texts)
    for phrase, expected in (
        (["heron", "water"], ([0, 0, 0, 0], [0, 0, 0, 0])),  # title's last word, body's first
        (["heron", "the"], ([0, 0, 0, 0], [0, 0, 0, 0])),  # body's last word, next chunk's first
        (["water", "heron"], ([0, 0, 0, 0], [1, 0, 0, 0])),
        (["water", "fern", "heron"], ([0, 0, 0, 0], [0, 0, 0, 0])),  # across chunk 2's columns
        (["fern", "heron"], ([0, 0, 0, 0], [0, 0, 1, 0])),
    ):
        numbers = [WORDS.index(w) for w in phrase]
        titles, bodies = places.counts([places.of(n, n + 1) for n in numbers], len(texts))
        assert (titles.tolist(), bodies.tolist()) == expected, phrase


def test_a_lookup_by_table_and_by_binary_search_keep_the_same_starts() -> None:
    rng = np.random.default_rng(6)
    size = 50_000
    found = 0
    for candidates in (10, size // TABLE_SHARE + 1, 20_000):  # binary search, then the table
        for offset in (0, 1, 3):
            words = [np.unique(rng.integers(0, size, n)) for n in (candidates, 30_000, 5)]
            words[2] = np.unique(np.concatenate([words[2], words[0][:3] + 2 - offset]))
            wanted = [np.sort(w - i) for i, w in enumerate(words)]
            expected = set(wanted[0].tolist()).intersection(*(w.tolist() for w in wanted[1:]))
            assert starts_of(words, size).tolist() == sorted(expected)
            found += len(expected)
    assert found  # some candidates are starts
    assert starts_of([np.asarray([4]), np.zeros(0, dtype=np.int64)], 10).tolist() == []
    assert starts_of([np.zeros(0, dtype=np.int64), np.asarray([4])], 10).tolist() == []
    assert starts_of([np.asarray([0, 9]), np.asarray([1, 9])], 10).tolist() == [0]  # 9 + 1 is past the end
