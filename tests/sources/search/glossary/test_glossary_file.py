"""Reading a glossary: tables of YAML, odd input included, never an exception."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.sources.search.glossary.file import (
    MAX_FILE_BYTES,
    Glossary,
    combined,
    parse_glossary,
    read_glossary,
)

PARSED = [
    # (what it shows, YAML, entries, whether a problem is said)
    (
        "a list of synonyms",
        "BP: [blood pressure, hypertension]",
        {("bp",): ("blood pressure", "hypertension")},
        False,
    ),
    ("one synonym as a string", "MI: heart attack", {("mi",): ("heart attack",)}, False),
    ("a phrase as the term", "myocardial infarction: [MI]", {("myocardial", "infarction"): ("MI",)}, False),
    ("an empty file", "", {}, False),
    ("a comment only", "# nothing yet\n", {}, False),
    ("empty synonyms are an entry left out", "BP: []\nMI: heart attack", {("mi",): ("heart attack",)}, True),
    ("a null synonym list is left out", "BP:\n", {}, True),
    (
        "a synonym of punctuation only is dropped",
        'BP: ["!!", blood pressure]',
        {("bp",): ("blood pressure",)},
        False,
    ),
    (
        "the term itself is not its synonym",
        "BP: [bp, BP, blood pressure]",
        {("bp",): ("blood pressure",)},
        False,
    ),
    (
        "a repeated synonym counts once",
        "BP: [blood pressure, Blood  Pressure]",
        {("bp",): ("blood pressure",)},
        False,
    ),
    (
        "FTS5 operators are kept as words",
        'x: [\'NEAR("a" b)\', "c OR d*"]',
        {("x",): ('NEAR("a" b)', "c OR d*")},
        False,
    ),
    ("a synonym of nine words is dropped", "x: [a b c d e f g h i, y]", {("x",): ("y",)}, False),
    ("a nested mapping is no synonym list", "x: {a: b}", {}, True),
    ("a boolean term is left out", "yes: [affirmative]", {}, True),
    (
        "numbers are text",
        "401k: [retirement plan]\n2fa: 2",
        {("401k",): ("retirement plan",), ("2fa",): ("2",)},
        False,
    ),
]


@pytest.mark.parametrize(("shows", "text", "entries", "problem"), PARSED, ids=[c[0] for c in PARSED])
def test_a_glossary_reads_as_its_usable_entries(
    shows: str, text: str, entries: dict[tuple[str, ...], tuple[str, ...]], problem: bool
) -> None:
    glossary = parse_glossary(text)
    assert dict(glossary.entries) == entries
    assert (glossary.problem is not None) == problem


BROKEN = [
    ("not YAML", "BP: [blood pressure\n  - : :", "not valid YAML"),
    ("a list, not a mapping", "- BP\n- blood pressure", "not a mapping"),
    ("a bare string", "just some words", "not a mapping"),
    ("a tab where YAML forbids it", "BP:\n\t- x", "not valid YAML"),
]


@pytest.mark.parametrize(("shows", "text", "said"), BROKEN, ids=[c[0] for c in BROKEN])
def test_a_broken_glossary_is_empty_with_a_plain_sentence(shows: str, text: str, said: str) -> None:
    glossary = parse_glossary(text, "glossary.yaml")
    assert not glossary
    assert glossary.problem is not None and said in glossary.problem and "glossary.yaml" in glossary.problem


def test_a_glossary_over_the_size_limit_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "glossary.yaml"
    path.write_text("x: [y]\n" + "#" * MAX_FILE_BYTES, encoding="utf-8")
    glossary = read_glossary(path)
    assert not glossary and glossary.problem is not None and "MB" in glossary.problem


def test_a_missing_glossary_is_empty_without_a_problem(tmp_path: Path) -> None:
    glossary = read_glossary(tmp_path / "glossary.yaml")
    assert not glossary and glossary.problem is None


def test_a_changed_glossary_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "glossary.yaml"
    path.write_text("BP: [blood pressure]\n", encoding="utf-8")
    assert read_glossary(path).entries == {("bp",): ("blood pressure",)}
    path.write_text("BP: [blood pressure, hypertension]\n", encoding="utf-8")
    assert read_glossary(path).entries == {("bp",): ("blood pressure", "hypertension")}


def test_invalid_utf8_is_read_as_far_as_it_goes(tmp_path: Path) -> None:
    path = tmp_path / "glossary.yaml"
    path.write_bytes(b"caf\xe9: [coffee shop]\nBP: [blood pressure]\n")
    assert read_glossary(path).entries[("bp",)] == ("blood pressure",)


def test_a_users_entry_replaces_the_servers_for_the_same_term() -> None:
    server = Glossary({("bp",): ("blood pressure",), ("mi",): ("heart attack",)})
    user = Glossary({("bp",): ("boiling point",)})
    both = combined(server, user)
    assert both.entries == {("bp",): ("boiling point",), ("mi",): ("heart attack",)}


def test_both_glossaries_problems_are_said() -> None:
    both = combined(Glossary(problem="the server glossary is broken"), Glossary(problem="glossary.yaml too"))
    assert both.problem == "the server glossary is broken; glossary.yaml too"
