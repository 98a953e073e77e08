"""Ranking checks on a folder of mixed files (`python -m experiments.checks`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from experiments.checks.runner import judge_above, judge_find, main, position
from tests.conftest import FIXTURES

CHECKS = Path(__file__).parent / "checks" / "fixtures.toml"
RESULTS: list[dict[str, Any]] = [
    {"title": "Sourdough Country Loaf", "uri": "notes://a", "score": 0.8},
    {"title": "pantry-staples", "uri": "notes://b", "score": 0.1},
    {"title": "Captain Mirelle", "uri": "characters://c", "score": 0.05},
]


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [("sourdough", 1), ("PANTRY", 2), ("characters://c", 3), ("characters://", None), ("absent", None)],
)
def test_an_item_is_found_by_a_title_fragment_or_its_exact_uri(fragment: str, expected: int | None) -> None:
    assert position(RESULTS, fragment) == expected


@pytest.mark.parametrize(
    ("expect", "top", "passed"), [("Sourdough", 1, True), ("Mirelle", 2, False), ("x", 3, False)]
)
def test_a_find_check_passes_only_within_its_top(expect: str, top: int, passed: bool) -> None:
    assert judge_find({"query": "q", "expect": expect, "top": top}, RESULTS).passed is passed


@pytest.mark.parametrize(
    ("full", "partial", "passed"),
    [
        ("Sourdough", "pantry", True),
        ("Mirelle", "pantry", False),
        ("pantry", "absent", True),
        ("absent", "pantry", False),
    ],
)
def test_an_above_check_needs_the_full_match_ranked_first(full: str, partial: str, passed: bool) -> None:
    outcome = judge_above({"query": "q", "full": full, "partial": partial}, RESULTS)
    assert outcome.passed is passed


def test_the_fixture_checks_pass_on_the_fixtures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--checks", str(CHECKS), "--folder", str(FIXTURES), "--mode", "lexical", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] == report["checks"] == 3
    assert set(report["items"]) == {"notes", "media", "chats", "characters", "prompts"}


def test_a_failing_check_fails_the_run_and_says_what_it_saw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checks = tmp_path / "checks.toml"
    checks.write_text(
        '[[find]]\nquery = "sourdough starter"\nexpect = "Code Reviewer"\ntop = 1\n', encoding="utf-8"
    )
    assert main(["--checks", str(checks), "--folder", str(FIXTURES), "--mode", "lexical"]) == 1
    out = capsys.readouterr().out
    assert "0/1 checks pass" in out and "FAIL find" in out and "Sourdough Country Loaf" in out
