"""expand_query: tables of queries and glossaries; the expanded query's FTS5 expression runs
against a real FTS5 table, so odd glossary text can never break a MATCH."""

from __future__ import annotations

import sqlite3

import pytest

from knowledge_mcp.sources.search.glossary.expand import PER_TERM, described, expand_query
from knowledge_mcp.sources.search.glossary.file import parse_glossary
from knowledge_mcp.sources.search.query import MAX_TERMS, parse_query

GLOSSARY = parse_glossary(
    """
BP: [blood pressure, hypertension, arterial tension]
blood pressure: [BP]
heart attack: [myocardial infarction, MI]
NEAR: ['"quoted" AND (x OR y*)', 'col:umn ^ -']
"""
).entries

EXPANDED = [
    # (what it shows, query, synonyms added in order)
    ("a word adds its first two synonyms", "BP", ["blood pressure", "hypertension"]),
    ("a word matches whatever its case", "bp readings", ["blood pressure", "hypertension"]),
    ("a phrase matches its words in a row", "after a heart attack", ["myocardial infarction", "MI"]),
    ("the longest term wins", "blood pressure cuff", ["BP"]),
    ("words apart are no phrase", "heart of the attack", []),
    ("a quoted phrase matches too", '"heart attack" recovery', ["myocardial infarction", "MI"]),
    ("nothing in the glossary", "sourdough levain", []),
    ("a synonym the query has is not added", "BP hypertension", ["blood pressure"]),
    ("operators in synonyms stay words", "near", ['"quoted" AND (x OR y*)', "col:umn ^ -"]),
]


@pytest.mark.parametrize(("shows", "text", "added"), EXPANDED, ids=[c[0] for c in EXPANDED])
def test_a_query_gains_the_synonyms_of_its_glossary_terms(shows: str, text: str, added: list[str]) -> None:
    query = parse_query(text)
    expanded = expand_query(query, text, GLOSSARY)
    assert [t.text for t in expanded.terms if t.synonym_of] == added
    assert len(added) <= PER_TERM * max(1, len(expanded.expansions))
    if not added:
        assert expanded is query


def test_the_users_terms_are_said_twice_so_they_weigh_twice_a_synonym() -> None:
    query = parse_query("BP treatment")
    expanded = expand_query(query, "BP treatment", GLOSSARY)
    assert expanded.boost == 2
    assert expanded.own_terms == query.terms
    assert [t.text for t in expanded.terms] == [
        "BP",
        "treatment",
        "BP",
        "treatment",
        "blood pressure",
        "hypertension",
    ]
    assert described(expanded) == ["BP → blood pressure, hypertension"]


def test_an_empty_glossary_leaves_the_query_as_it_is() -> None:
    query = parse_query("BP")
    assert expand_query(query, "BP", {}) is query


def test_an_expanded_query_stays_within_the_term_limit() -> None:
    text = " ".join(f"w{n}" for n in range(MAX_TERMS // 2 - 1)) + " BP"
    expanded = expand_query(parse_query(text), text, GLOSSARY)
    assert len(expanded.terms) <= MAX_TERMS


def test_a_query_of_too_many_words_is_not_expanded() -> None:
    text = " ".join(f"w{n}" for n in range(MAX_TERMS)) + " BP"
    query = parse_query(text)
    assert expand_query(query, text, GLOSSARY) is query


@pytest.mark.parametrize("text", ["BP", "near", "heart attack", "blood pressure"])
def test_every_expanded_expression_runs_in_fts5(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE docs USING fts5(title, body, tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute("INSERT INTO docs VALUES ('Pressure', 'my blood pressure was high after the heart attack')")
    expression = expand_query(parse_query(text), text, GLOSSARY).match_expression()
    rows = conn.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (expression,)).fetchall()
    assert rows == [(1,)] or text == "near"
