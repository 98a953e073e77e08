"""YAML front matter, tag lists and date parsing: tables of the shapes real files have."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import yaml

from knowledge_mcp.sources.text.dates import iso, parse_date
from knowledge_mcp.sources.text.frontmatter import split_front_matter, string_list

# (file text, front matter mapping, body)
FRONT_MATTER_CASES = [
    ("Just a note.\n", {}, "Just a note.\n"),
    ("", {}, ""),
    ("---\ntitle: Hello\ntags: [a, b]\n---\nBody\n", {"title": "Hello", "tags": ["a", "b"]}, "Body\n"),
    ("---\ntitle: Hello\n---\n", {"title": "Hello"}, ""),
    ("---\ntitle: Hello\n---", {"title": "Hello"}, ""),
    ("---\n---\nBody", {}, "Body"),
    ("---\n\n---\nBody", {}, "Body"),
    ("---\r\n---\r\nBody", {}, "Body"),
    ("---\n# only a comment\n---\nBody", {}, "Body"),
    ("---\n- a\n- b\n---\nBody", {}, "Body"),
    ("---\njust a string\n---\nBody", {}, "Body"),
    ("\ufeff---\ntitle: BOM\n---\nBody", {"title": "BOM"}, "Body"),
    ("\ufeffNo front matter", {}, "No front matter"),
    ("---\r\ntitle: CRLF\r\n---\r\nBody\r\n", {"title": "CRLF"}, "Body\r\n"),
    ("---\ntitle: Dots\n...\nBody", {"title": "Dots"}, "Body"),
    ("---  \ntitle: Trailing\n---\t\nBody", {"title": "Trailing"}, "Body"),
    (
        "---\ntitle: A\n---\nBody\n---\nnot: front matter\n---\n",
        {"title": "A"},
        "Body\n---\nnot: front matter\n---\n",
    ),
    ("Intro\n---\ntitle: late\n---\n", {}, "Intro\n---\ntitle: late\n---\n"),
    ("---\nunterminated: yes\nBody", {}, "---\nunterminated: yes\nBody"),
    ("----\ntitle: four dashes\n----\nBody", {}, "----\ntitle: four dashes\n----\nBody"),
]


@pytest.mark.parametrize(
    ("text", "meta", "body"), FRONT_MATTER_CASES, ids=[repr(c[0][:24]) for c in FRONT_MATTER_CASES]
)
def test_split_front_matter(text: str, meta: dict[str, Any], body: str) -> None:
    assert split_front_matter(text) == (meta, body)


def test_front_matter_dates_come_back_as_yaml_dates() -> None:
    meta, _ = split_front_matter("---\ncreated: 2024-01-02\n---\n")
    assert meta == {"created": dt.date(2024, 1, 2)}


def test_malformed_yaml_front_matter_raises_so_the_importer_reports_the_file() -> None:
    with pytest.raises(yaml.YAMLError):
        split_front_matter("---\ntitle: [unclosed\n---\nBody")


# (YAML value, tags)
STRING_LIST_CASES = [
    (None, []),
    ([], []),
    ("", []),
    (["a", "b"], ["a", "b"]),
    ("a, b", ["a", "b"]),
    ("a b\tc", ["a", "b", "c"]),
    ("a,,b , c", ["a", "b", "c"]),
    ("#tag", ["tag"]),
    ("#a #b", ["a", "b"]),
    (["#a", " b ", "# c"], ["a", "b", "c"]),
    (["a", "a", "#a"], ["a"]),
    (["", "  ", "#"], []),
    ([1, 2.5, True], ["1", "2.5", "True"]),
    (42, ["42"]),
    ("Ünïcode, 中文", ["Ünïcode", "中文"]),
    (["multi word"], ["multi word"]),
]


@pytest.mark.parametrize(
    ("value", "expected"), STRING_LIST_CASES, ids=[repr(c[0]) for c in STRING_LIST_CASES]
)
def test_string_list(value: Any, expected: list[str]) -> None:
    assert string_list(value) == expected


# (value, ISO 8601 with timezone, or None)
DATE_CASES = [
    (dt.date(2024, 1, 2), "2024-01-02T00:00:00+00:00"),
    (dt.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02T03:04:05+00:00"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 999), "2024-01-02T03:04:05+00:00"),
    (
        dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        "2024-01-02T03:04:05+02:00",
    ),
    (1_700_000_000, "2023-11-14T22:13:20+00:00"),
    (1_700_000_000.5, "2023-11-14T22:13:20+00:00"),
    (1_700_000_000_000, "2023-11-14T22:13:20+00:00"),
    (0, "1970-01-01T00:00:00+00:00"),
    ("2024-01-02", "2024-01-02T00:00:00+00:00"),
    ("2024-01-02T03:04:05", "2024-01-02T03:04:05+00:00"),
    ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05+00:00"),
    ("2024-01-02 03:04:05+05:30", "2024-01-02T03:04:05+05:30"),
    ("  2024-01-02T03:04:05Z  ", "2024-01-02T03:04:05+00:00"),
    ("Tue, 02 Jan 2024 03:04:05 +0100", "2024-01-02T03:04:05+01:00"),
    ("Tue, 02 Jan 2024 03:04:05 GMT", "2024-01-02T03:04:05+00:00"),
    ("02 Jan 2024 03:04:05 -0000", "2024-01-02T03:04:05+00:00"),
    (None, None),
    ("", None),
    ("   ", None),
    ("garbage", None),
    ("2024-13-45", None),
    ("yesterday", None),
    (True, None),
    ([2024, 1, 2], None),
    ({"date": "2024-01-02"}, None),
    (10**20, None),
    (float("nan"), None),
    (float("inf"), None),
]


@pytest.mark.parametrize(("value", "expected"), DATE_CASES, ids=[repr(c[0]) for c in DATE_CASES])
def test_parse_date(value: Any, expected: str | None) -> None:
    assert parse_date(value) == expected


def test_iso_assumes_utc_for_naive_times_and_drops_microseconds() -> None:
    assert iso(dt.datetime(2024, 5, 6, 7, 8, 9, 123456)) == "2024-05-06T07:08:09+00:00"
    aware = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone(dt.timedelta(hours=-7)))
    assert iso(aware) == "2024-05-06T07:08:09-07:00"


def test_parsed_dates_always_carry_a_timezone() -> None:
    for value, expected in DATE_CASES:
        if expected is not None:
            assert dt.datetime.fromisoformat(expected).tzinfo is not None, value
