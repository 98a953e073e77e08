"""match_reason: a table of what matched where, and the sentence it makes."""

from __future__ import annotations

import pytest

from knowledge_mcp.sources.text.reasons import match_reason

CASES = [
    # (what it shows, title terms, body terms, tag terms, semantic, synonyms, reason)
    ("both places", ["levain"], ["levain"], [], False, {}, "title and body match 'levain'"),
    ("the body only", [], ["levain", "crumb"], [], False, {}, "body matches 'levain', 'crumb'"),
    ("the title only", ["levain"], [], [], False, {}, "title matches 'levain'"),
    (
        "each place its terms",
        ["levain", "rye"],
        ["levain", "crumb"],
        [],
        False,
        {},
        "title and body match 'levain'; title matches 'rye'; body matches 'crumb'",
    ),
    ("a tag", [], [], ["sourdough"], False, {}, "tag match 'sourdough'"),
    ("the embeddings alone", [], [], [], True, {}, "semantic match"),
    ("words and the embeddings", [], ["levain"], [], True, {}, "body matches 'levain' and semantic match"),
    (
        "a synonym names its term",
        [],
        ["blood pressure"],
        [],
        False,
        {"blood pressure": "BP"},
        "body matches 'blood pressure' (for 'BP')",
    ),
    ("many terms are cut", [], ["a", "b", "c", "d", "e"], [], False, {}, "body matches 'a', 'b', 'c' +2"),
    ("nothing known", [], [], [], False, {}, "query match"),
]


@pytest.mark.parametrize(
    ("shows", "title", "body", "tags", "semantic", "synonyms", "reason"), CASES, ids=[c[0] for c in CASES]
)
def test_a_reason_says_what_matched_where(
    shows: str,
    title: list[str],
    body: list[str],
    tags: list[str],
    semantic: bool,
    synonyms: dict[str, str],
    reason: str,
) -> None:
    assert match_reason(title, body, tags, semantic=semantic, synonym_of=synonyms) == reason
