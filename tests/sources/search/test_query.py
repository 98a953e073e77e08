"""parse_query: tables of user text, and every expression it builds run against a real FTS5 table."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator

import pytest

from knowledge_mcp.sources.search.query import MAX_QUERY_CHARS, MAX_TERMS, parse_query

TOKENIZER = "porter unicode61 remove_diacritics 2"

ROWS = [
    (1, "pg_dump backups", "Nightly pg_dump runs before the cutover window opens."),
    (2, "E-mail setup", "Configure e-mail delivery on the node.js servers; don't forget --force."),
    (3, "Café notes", "The cafe on the corner serves crème brûlée and naïve espresso."),
    (4, "Databases", "A database stores data. The quick brown fox jumps over the lazy dog."),
    (5, "Stop words", "To be or not to be, that is the question."),
]


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE docs USING fts5(title, body, tokenize='{TOKENIZER}')")
    conn.executemany("INSERT INTO docs(rowid, title, body) VALUES (?, ?, ?)", ROWS)
    yield conn
    conn.close()


def search(conn: sqlite3.Connection, text: str) -> set[int]:
    """The caller's contract: an empty expression means no results, without running MATCH."""
    expression = parse_query(text).match_expression()
    if not expression:
        return set()
    rows = conn.execute("SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs)", (expression,))
    return {row[0] for row in rows}


# (user text, term texts as shown back to the user, FTS5 MATCH expression)
PARSE_CASES = [
    ("sourdough starter", ["sourdough", "starter"], '"sourdough" OR "starter"'),
    ('"cutover window" plan', ["cutover window", "plan"], '"cutover window" OR "plan"'),
    ("data*", ["data*"], '"data" *'),
    ('"quick bro"*', ["quick bro"], '"quick bro"'),
    ("pg_dump", ["pg_dump"], '"pg dump"'),
    ("e-mail", ["e-mail"], '"e mail"'),
    ("node.js", ["node.js"], '"node js"'),
    ("don't panic", ["don't", "panic"], '"don t" OR "panic"'),
    ("--force", ["--force"], '"force"'),
    ("NEAR(a b)", ["NEAR(a", "b"], '"near a" OR "b"'),
    ("title:foo", ["title:foo"], '"title foo"'),
    ("cats AND dogs", ["cats", "dogs"], '"cats" OR "dogs"'),
    ("cats OR dogs NOT birds", ["cats", "dogs", "birds"], '"cats" OR "dogs" OR "birds"'),
    ("AND OR NOT", ["AND", "OR", "NOT"], '"and" OR "or" OR "not"'),
    ('"unbalanced quote', ["unbalanced quote"], '"unbalanced quote"'),
    ('one "two three', ["one", "two three"], '"one" OR "two three"'),
    ("Café crème", ["Café", "crème"], '"café" OR "crème"'),
    ("the cat", ["cat"], '"cat"'),
    ("the and of", ["the", "and", "of"], '"the" OR "and" OR "of"'),
    ("the*", ["the*"], '"the" *'),
    ("Foo foo FOO", ["Foo"], '"foo"'),
    ('spaces "  padded  phrase  "', ["spaces", "padded  phrase"], '"spaces" OR "padded phrase"'),
    ("end.", ["end"], '"end"'),
    ("(grouped)", ["grouped"], '"grouped"'),
    ("a^b", ["a^b"], '"a b"'),
    ("x+y-z", ["x+y-z"], '"x y z"'),
    ("{col1 col2}: word", ["col1", "col2", "word"], '"col1" OR "col2" OR "word"'),
]


@pytest.mark.parametrize(("text", "terms", "expression"), PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_user_text_becomes_quoted_terms(text: str, terms: list[str], expression: str) -> None:
    parsed = parse_query(text)
    assert parsed.term_texts == terms
    assert parsed.match_expression() == expression


@pytest.mark.parametrize(
    "text", ["", "   ", "🎉🔥🚀", '""', '"', "***", "()", "-- ++ ^^", "\u200d\u200d", None]
)
def test_text_without_words_is_an_empty_query(text: str | None) -> None:
    parsed = parse_query(text)  # type: ignore[arg-type]
    assert parsed.is_empty
    assert parsed.match_expression() == ""
    assert parsed.term_texts == []


def test_duplicates_are_removed_keeping_the_first_spelling() -> None:
    parsed = parse_query('Rust rust RUST "rust" rust*')
    assert parsed.term_texts == ["Rust", "rust*"]


def test_a_phrase_and_its_words_are_different_terms() -> None:
    assert parse_query('"quick fox" quick fox').term_texts == ["quick fox", "quick", "fox"]


def test_stop_words_are_dropped_when_the_query_has_other_words() -> None:
    parsed = parse_query("what is the cutover window for the database")
    assert parsed.term_texts == ["cutover", "window", "database"]


def test_a_query_of_only_stop_words_keeps_them() -> None:
    assert parse_query("to be or not to be").term_texts == ["to", "be", "or", "not"]


def test_stop_words_inside_a_phrase_are_kept() -> None:
    assert parse_query('"to be or not to be" question').match_expression() == (
        '"to be or not to be" OR "question"'
    )


def test_a_ten_kilobyte_query_is_capped_in_length_and_terms() -> None:
    text = " ".join(f"word{i}" for i in range(1500))
    assert len(text) > 10_000
    parsed = parse_query(text)
    assert 0 < len(parsed.terms) <= MAX_TERMS
    allowed = set(text[:MAX_QUERY_CHARS].split())
    assert all(term.text in allowed for term in parsed.terms)


def test_a_ten_kilobyte_single_word_is_cut_to_the_length_cap() -> None:
    parsed = parse_query("x" * 10_000)
    assert [len(term.words[0]) for term in parsed.terms] == [MAX_QUERY_CHARS]


def test_more_distinct_words_than_the_cap_keeps_the_first_ones() -> None:
    parsed = parse_query(" ".join(f"w{i}" for i in range(MAX_TERMS + 10)))
    assert parsed.term_texts == [f"w{i}" for i in range(MAX_TERMS)]


# (user text, rowids the search must return)
MATCH_CASES = [
    ("pg_dump", {1}),
    ("e-mail", {2}),
    ("node.js", {2}),
    ("--force", {2}),
    ("don't", {2}),
    ("cafe", {3}),
    ("café", {3}),
    ("creme brulee", {3}),
    ("naive", {3}),
    ("data*", {4}),
    ("datab*", {4}),
    ('"cutover window"', {1}),
    ('"window cutover"', set()),
    ('"quick brown', {4}),
    ("jumping", {4}),
    ("title:databases", set()),
    ("NOT databases", {4}),
    ("to be or not to be", {5}),
    ("🎉", set()),
]


@pytest.mark.parametrize(("text", "rowids"), MATCH_CASES, ids=[c[0] for c in MATCH_CASES])
def test_expression_finds_the_rows_the_user_meant(
    fts: sqlite3.Connection, text: str, rowids: set[int]
) -> None:
    assert search(fts, text) == rowids


NASTY = [
    '"',
    '""',
    '"""',
    "'",
    "''",
    "*",
    "**",
    "a*b*",
    "*a",
    "^",
    "^a",
    "a^",
    "-",
    "--",
    "-a",
    "a-",
    "+",
    "+a",
    "(",
    ")",
    "()",
    "(a",
    "a)",
    "((a))",
    "a:b",
    ":",
    "a:",
    ":a",
    "title:",
    "body:(a b)",
    "{title body}: a",
    "{",
    "}",
    "[",
    "]",
    "[a]",
    "NEAR",
    "NEAR(",
    "NEAR(a b, 3)",
    "NEAR/3",
    "a NEAR b",
    "AND",
    "OR",
    "NOT",
    "a AND",
    "OR b",
    "NOT NOT",
    "a OR OR b",
    "AND (OR)",
    "a, b",
    ",",
    ".",
    "...",
    "a.",
    ".a",
    "a..b",
    "\\",
    '\\"',
    'a"b',
    'a"b"c',
    'say "hi',
    "'quoted'",
    "it's",
    "it''s",
    "a\x00b",
    "\x00",
    "\t\n\r",
    "\u00a0",
    "\u200b",
    "\ufeffword",
    "e\u0301",
    "ß",
    "ǅ",
    "İstanbul",
    "中文搜索",
    "日本語",
    "한국어",
    "العربية",
    "עברית",
    "٣٤",
    "²³",
    "ⅷ",
    "🎉 party 🎉",
    "👩‍👩‍👧",
    "x" * 5000,
    "a " * 3000,
    '" ' * 3000,
    "a*" * 1000,
    "(" * 1000,
    "NEAR(" * 500,
    "🙂" * 2000,
    "%",
    "%%",
    "_",
    "__",
    "a_",
    "_a",
    "$",
    "#tag",
    "@user",
    "a|b",
    "a&b",
    "a~b",
    "a?b",
    "a!b",
    "a/b",
    "SELECT * FROM docs; --",
    "'; DROP TABLE docs; --",
    '") OR 1=1 --',
    "rowid:1",
    "rank:1",
    "docs:",
    "0",
    "-1",
    "1e10",
    "0x1F",
    "NaN",
    "null",
    "None",
    "true",
]


@pytest.mark.parametrize("text", NASTY, ids=range(len(NASTY)))
def test_nasty_input_never_raises_an_sqlite_error(fts: sqlite3.Connection, text: str) -> None:
    expression = parse_query(text).match_expression()
    assert isinstance(expression, str)
    if expression:
        fts.execute(
            "SELECT rowid, bm25(docs), highlight(docs, 1, '[', ']') FROM docs WHERE docs MATCH ?",
            (expression,),
        ).fetchall()


ALPHABET = list("\"*():^-+.,'{}[]") + list("abcxyzAQZ0189") + [" ", " ", "\t", "\n", "🎉", "🙂", "é", "_"]


def test_two_thousand_random_strings_never_raise_an_sqlite_error(fts: sqlite3.Connection) -> None:
    rng = random.Random(1234)
    searched = 0
    for _ in range(2000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40)))
        expression = parse_query(text).match_expression()
        if not expression:
            continue
        try:
            fts.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (expression,)).fetchall()
        except sqlite3.Error as exc:  # pragma: no cover - the failure message names the input
            pytest.fail(f"{text!r} -> {expression!r} raised {exc}")
        searched += 1
    assert searched > 1000  # the fuzz really exercised MATCH, not just empty queries
