"""Chunks tokenized as FTS5 tokenizes them, and phrases counted from positions (pure)."""

from __future__ import annotations

import sqlite3

import pytest

from knowledge_mcp.sources.storage.postgres.tokens import TITLE_BASE, index, phrase_starts
from knowledge_mcp.sources.storage.schema import TOKENIZER


def fts5_terms(title: str, body: str) -> list[tuple[str, str]]:
    """(column, term) of each token, in order, straight from an FTS5 table of the index's tokenizer."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(title, body, tokenize='{TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.execute("INSERT INTO t VALUES (?, ?)", (title, body))
    return [(c, t) for c, t in conn.execute("SELECT col, term FROM v ORDER BY col DESC, offset")]


@pytest.mark.parametrize(
    ("title", "body"),
    [
        ("Running fast", "The runners ran; running again."),
        ("Crème brûlée (recette de Mamie)", "Faire chauffer la crème à 80 °C"),
        ("醤油ラーメン", "shoyu ramen, e-mail node.js pg_dump"),
        ("", "only a body"),
        ("title only", ""),
    ],
)
def test_tokens_are_the_index_tokenizers_own(title: str, body: str) -> None:
    indexed = index([("padding words", "before it"), (title, body)])
    expected = fts5_terms(title, body)
    places = {}
    for term, postings in indexed.postings.items():
        for text, in_title, in_body, positions in postings:
            if text == 1:
                at = [int(p) for p in positions.split(",")]
                assert (in_title, in_body) == (sum(p < 0 for p in at), sum(p >= 0 for p in at))
                places |= {p: term for p in at}
    in_order = [("title" if p < 0 else "body", places[p]) for p in sorted(places)]
    assert in_order == expected
    assert indexed.lengths == [4, len(expected)]


def test_postings_count_each_term_per_column_and_keep_its_positions() -> None:
    indexed = index([("Run home", "runners run and run"), ("", "home alone")])
    postings = indexed.postings
    assert postings["run"] == [(0, 1, 2, f"{TITLE_BASE},1,3")]
    assert postings["home"] == [(0, 1, 0, f"{TITLE_BASE + 1}"), (1, 0, 1, "0")]
    assert postings["runner"] == [(0, 0, 1, "0")]
    assert indexed.lengths == [6, 2]


def test_postings_are_grouped_by_term_in_the_texts_order() -> None:
    texts = [(f"note {n}", " ".join(["zebra"] * (n % 3 + 1)) + f" w{n % 5}") for n in range(40)]
    indexed = index(texts)
    assert [p[0] for p in indexed.postings["zebra"]] == list(range(40))
    assert [p[2] for p in indexed.postings["zebra"]] == [n % 3 + 1 for n in range(40)]
    assert [p[0] for p in indexed.postings["w2"]] == [2, 7, 12, 17, 22, 27, 32, 37]
    assert sum(len(p) for p in indexed.postings.values()) == 40 * 4  # note, its number, zebra, w*


@pytest.mark.parametrize(
    ("positions", "expected"),
    [
        ([{0, 5}, {1, 9}], (0, 1)),  # once in the body
        ([{0, 2}, {1, 3}], (0, 2)),  # twice
        ([{TITLE_BASE}, {TITLE_BASE + 1}], (1, 0)),  # in the title
        ([{TITLE_BASE + 3}, {0}], (0, 0)),  # the title's last word and the body's first: no phrase
        ([{0}, {2}], (0, 0)),  # a word between
        ([{0, 1}, {1, 2}, {2, 3}], (0, 2)),  # three words, overlapping instances
        ([], (0, 0)),
    ],
)
def test_a_phrase_is_counted_where_its_words_follow_each_other(
    positions: list[set[int]], expected: tuple[int, int]
) -> None:
    assert phrase_starts(positions) == expected
