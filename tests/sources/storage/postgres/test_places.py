"""A small source's copy counts a phrase in each chunk's title and body from its words' places
(`store/places.py`) as a scan of the chunks' words counts it, whichever word is rarest (pure)."""

from __future__ import annotations

import random

import numpy as np

from knowledge_mcp.sources.storage.postgres.postings import positions
from knowledge_mcp.sources.storage.postgres.store.places import CHUNK_SHIFT, Places, starts_of

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
    """The copy's places of these chunks, as `read_places` lays them out."""
    keys: list[list[int]] = [[] for _ in WORDS]
    for c, (title, body) in enumerate(texts):
        for base, words in ((0, title), (positions.BODY, body)):
            for place, word in enumerate(words):
                keys[WORDS.index(word)].append((c << CHUNK_SHIFT) + base + place)
    sizes = [len(k) for k in keys]
    return Places(
        np.asarray([k for term in keys for k in sorted(term)], dtype=np.int64),
        np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
    )


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


def test_a_word_not_in_the_copy_or_a_phrase_crossing_chunks_matches_nothing() -> None:
    one = np.asarray([(0 << CHUNK_SHIFT) + positions.BODY + 7], dtype=np.int64)  # the last word of chunk 0
    after = np.asarray([(1 << CHUNK_SHIFT) + 0], dtype=np.int64)  # the first word of chunk 1's title
    assert starts_of([one, np.zeros(0, dtype=np.int64)]).tolist() == []
    assert starts_of([np.zeros(0, dtype=np.int64), one]).tolist() == []
    assert starts_of([one, after]).tolist() == []
    assert starts_of([one, one + 1]).tolist() == one.tolist()
