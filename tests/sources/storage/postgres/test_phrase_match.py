"""A phrase found in its words' blocks as arrays counts what the per-chunk reference counts, and the
blocks' places as bytes give back the positions they were made from (pure)."""

from __future__ import annotations

import random

import numpy as np

from knowledge_mcp.sources.storage.postgres.postings import positions
from knowledge_mcp.sources.storage.postgres.postings.phrase_match import Row, merged, postings, starts, within
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
                positions.encode(
                    positions.places_of(np.asarray([int(x) for *_, p in part for x in p.split(",")]))
                ),
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


def test_a_prefix_read_as_one_word_counts_what_its_lexemes_positions_count_together() -> None:
    texts = chunks(3, 60)
    indexed = index(texts)
    ids = list(range(1, len(texts) + 1))
    by_word = {w: postings(blocks(indexed.postings[w], ids, size=8)) for w in WORDS}
    prefix = merged([by_word["the"], by_word["to"]])  # as if both started with the prefix
    assert list(prefix.chunks) == sorted(set(by_word["the"].chunks) | set(by_word["to"].chunks))
    positions_of = {
        w: {c: {int(p) for p in text.split(",")} for c, _, _, text in indexed.postings[w]} for w in WORDS
    }
    expected = []
    for c in range(len(texts)):
        either = positions_of["the"].get(c, set()) | positions_of["to"].get(c, set())
        if c in positions_of["water"] and either:
            in_title, in_body = phrase_starts([positions_of["water"][c], either])
            if in_title or in_body:
                expected.append(ids[c])
    assert [h[0] for h in starts(["water", ""], by_word | {"": prefix})] == expected
    assert expected  # the phrase does occur


def test_places_as_bytes_give_back_every_stored_position_narrow_or_wide() -> None:
    rng = random.Random(5)
    for top in (300, 70_000):  # a narrow block, and one with a place past 16 bits
        titles = [rng.randint(0, 3) for _ in range(40)]
        bodies = [rng.randint(1 if t == 0 else 0, 9) for t in titles]
        stored = [
            p
            for t, b in zip(titles, bodies, strict=True)
            for p in sorted(TITLE_BASE + x for x in rng.sample(range(50), t))
            + sorted(rng.sample(range(top), b))
        ]
        data = positions.encode(positions.places_of(np.asarray(stored, dtype=np.int64)))
        assert positions.is_wide(data) == (top > positions.LIMIT)
        got = positions.decode([data], np.asarray(titles), np.asarray(bodies))
        assert got.tolist() == [p - TITLE_BASE for p in stored]  # a title's places below BODY
        keep = np.asarray([n % 3 == 0 for n in range(len(titles))])
        counts = np.asarray(titles) + np.asarray(bodies)
        kept = positions.decode(
            [positions.cut(data, counts, keep)], np.asarray(titles)[keep], np.asarray(bodies)[keep]
        )
        assert (
            kept.tolist() == positions.decode([data], np.asarray(titles), np.asarray(bodies), keep).tolist()
        )
        assert kept.tolist() == got[np.repeat(keep, counts)].tolist()
