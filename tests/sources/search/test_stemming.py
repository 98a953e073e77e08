"""Which words of a hit match the query, found the way the porter index matches them."""

from __future__ import annotations

import random
import re
import sqlite3

import pytest

from knowledge_mcp.sources.search import stemming
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.search.stemming import QueryMatcher
from knowledge_mcp.sources.storage.schema import TOKENIZER


@pytest.mark.parametrize(
    ("query", "text", "first", "terms"),
    [
        ("running", "We ran. Then the runners kept running home.", 30, ["running"]),
        ("bread baking", "Baked bread: she bakes bread daily.", 0, ["bread", "baking"]),
        ("ferment*", "A slow fermentation of rye.", 7, ["ferment*"]),
        ("garden", "Notes on gardening, and the garden itself.", 9, ["garden"]),
        ("garden", "No match here at all.", None, []),
        ('"rye bread"', "Dark rye bread, then rye.", 5, ["rye bread"]),
        ("café", "Le CAFÉ est ouvert.", 3, ["café"]),
        ("zebra", "xzebra is not a word start; zebras are.", 28, ["zebra"]),
    ],
)
def test_finds_first_match_and_matched_terms(
    query: str, text: str, first: int | None, terms: list[str]
) -> None:
    matcher = QueryMatcher(parse_query(query))
    found = matcher.find(text)
    assert found.first == first
    assert found.terms == terms
    # The cheap search for the first match alone agrees, told the terms or not.
    assert matcher.first_match(text) == first
    assert matcher.first_match(text, terms) == first


def test_first_match_looks_only_for_the_terms_it_is_told() -> None:
    matcher = QueryMatcher(parse_query("kneading dough oven"))
    text = "Preheat the oven, then knead the dough."
    assert matcher.first_match(text) == 12
    assert matcher.first_match(text, ["dough"]) == 33
    assert matcher.first_match(text, ["kneading", "dough"]) == 23
    assert matcher.first_match(text, []) is None


def test_terms_found_only_in_the_title_count_but_give_no_position() -> None:
    found = QueryMatcher(parse_query("sourdough starter")).find("Feed it daily.", "Sourdough starter care")
    assert found.first is None
    assert found.terms == ["sourdough", "starter"]


def test_text_whose_normalized_form_has_another_length_gives_no_position() -> None:
    # NFKC turns the ligature "ﬁ" into "fi": positions in the normalized text would be off.
    found = QueryMatcher(parse_query("fig")).find("ﬁne ﬁgs grow here")
    assert found.terms == ["fig"]
    assert found.first is None


def test_find_all_matches_each_group_on_its_own() -> None:
    matcher = QueryMatcher(parse_query("solar panels"))
    first, second = matcher.find_all([("Solar power.", ""), ("Panel wiring.", "Solar roof")])
    assert (first.first, first.terms) == (0, ["solar"])
    assert (second.first, second.terms) == (0, ["solar", "panels"])


def test_stems_are_the_index_tokenizers_batch_after_batch() -> None:
    """The stemmer's table keeps no content and is emptied after each batch: every word's stem is
    still the one an FTS5 table with content gives it, and no batch sees the one before it."""
    words = [
        "running", "runners", "happily", "caresses", "ponies", "generalization", "oxen", "café",
        "naïve", "straße", "日本語", "x_y", "123abc", "ﬁne", "rationalize", "feed", "agreed",
    ]  # fmt: skip
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(words, 1))
    expected = dict(db.execute("SELECT doc, term FROM v ORDER BY doc, offset"))
    stemmer = stemming._Stemmer()
    got = stemmer.stems(words[:9]) + stemmer.stems(words[9:])
    assert got == [str(expected.get(n, word)) for n, word in enumerate(words, 1)]
    assert got[:3] == ["run", "runner", "happili"]
    assert stemmer.stems(["zzyzx"]) == ["zzyzx"]  # a later batch alone: nothing left of the others


def test_first_matches_of_a_page_agree_with_each_text_alone() -> None:
    matcher = QueryMatcher(parse_query("kneading dough oven ferment*"))
    texts = [
        ("Preheat the oven, then knead the dough.", None),
        ("Preheat the oven, then knead the dough.", ["dough"]),
        ("A slow fermentation; the dough rests.", ["ferment*", "dough"]),
        ("ﬁne dough", None),  # NFKC changes its length: no position
        ("Nothing here.", None),
        ("Ovens and doughs.", []),
    ]
    assert matcher.first_matches(texts) == [matcher.first_match(t, terms) for t, terms in texts]
    assert matcher.first_matches(texts) == [12, 33, 7, None, None, None]


def test_a_pages_unseen_words_are_stemmed_in_one_statement(monkeypatch: pytest.MonkeyPatch) -> None:
    words = [f"zqx{n}quill" for n in range(20)]  # never seen before: none is in the stemmer's cache
    matcher = QueryMatcher(parse_query("zqxquill"))
    calls = []
    stems = stemming._STEMMER.stems
    monkeypatch.setattr(stemming._STEMMER, "stems", lambda ws: calls.append(list(ws)) or stems(ws))
    matcher.first_matches([(f"the {word} here", None) for word in words])
    assert [sorted(c) for c in calls if c] == [sorted(words)]


def test_the_first_match_is_the_earliest_matching_word_whatever_the_heads_order() -> None:
    """Each head's search stops where an earlier head found a match: the first match must still
    be the earliest word whose stem the query wants, with heads of several lengths (a stem of
    two letters) and words that start alike but do not match."""
    rng = random.Random(28)
    words = ["ox", "oxen", "oxygen", "run", "runner", "running", "rung", "bread", "breadth", "brea", "xox"]
    matcher = QueryMatcher(parse_query("ox running bread"))
    wanted = {"ox", "run", "bread"}
    for _ in range(2_000):
        chosen = [rng.choice(words) for _ in range(rng.randint(1, 12))]
        text = " ".join(chosen)
        starts = [m.start() for m in re.finditer(r"\S+", text)]
        expected = next(
            (at for at, w in zip(starts, chosen, strict=True) if stemming.stems([w])[0] in wanted), None
        )
        assert matcher.first_matches([(text, None)]) == [expected], text


@pytest.mark.parametrize("prefix", ["shis", "ship", "runn", "running", "stories", "happi", "fermen", "ox"])
def test_a_prefix_matches_the_words_fts5_matches_it_with(prefix: str) -> None:
    """FTS5's porter tokenizer stems a prefix before it looks for index terms starting with it
    (`shis*` is `shi*`): the matcher says a text matches a prefix exactly when FTS5 does."""
    texts = [
        "The ship sailed.",
        "A shield and shins.",
        "She was running late.",
        "The runner ran.",
        "Stories and storied towns.",
        "Happiness, happily.",
        "A slow fermentation.",
        "Oxen and an ox.",
        "Nothing here.",
    ]
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{TOKENIZER}')")
    db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(texts, 1))
    fts = {rowid for (rowid,) in db.execute("SELECT rowid FROM t WHERE t MATCH ?", (f'"{prefix}" *',))}
    matcher = QueryMatcher(parse_query(f"{prefix}*"))
    found = matcher.find_all([(text,) for text in texts])
    assert {n for n, m in enumerate(found, 1) if m.terms == [f"{prefix}*"]} == fts
    firsts = matcher.first_matches([(text, None) for text in texts])
    assert {n for n, first in enumerate(firsts, 1) if first is not None} == fts
