"""The rerank stage's pure helpers, by tables of inputs: the passage a backend reads, the order
its scores give, the scores that order carries, and the sampling prompt and its answer."""

from __future__ import annotations

import pytest

from knowledge_mcp.sources.search.rerank.backend import RerankError
from knowledge_mcp.sources.search.rerank.order import passage, reordered, transplanted
from knowledge_mcp.sources.search.rerank.prompt import ranking_of, ranking_prompt, scores_of


@pytest.mark.parametrize(
    ("title", "body", "max_chars", "expected"),
    [
        ("Loaf", "Flour,\n\n water  and salt.", 100, "Loaf. Flour, water and salt."),
        (None, "only a body", 100, "only a body"),
        ("Only a title", None, 100, "Only a title"),
        ("T", "one two three four five", 12, "T. one two"),
        ("T", "x" * 30, 10, "T. " + "x" * 7),
    ],
)
def test_a_passage_is_the_title_and_body_collapsed_and_cut_at_a_word(
    title: str | None, body: str | None, max_chars: int, expected: str
) -> None:
    assert passage(title, body, max_chars) == expected


@pytest.mark.parametrize(
    ("scores", "order"),
    [
        ([0.1, 0.9, 0.5], [1, 2, 0]),
        ([1.0, 1.0, 2.0], [2, 0, 1]),  # ties keep the fused order
        ([-3.0, -1.0], [1, 0]),  # logits may be negative
        ([], []),
    ],
)
def test_the_new_order_is_by_descending_score_ties_in_fused_order(
    scores: list[float], order: list[int]
) -> None:
    assert reordered(scores) == order


@pytest.mark.parametrize(
    ("fused", "expected"),
    [([0.9, 0.7, 0.2], [0.9, 0.7, 0.2]), ([0.5, 0.5, 0.1], [0.5, 0.5, 0.1]), ([0.2, 0.8], [0.8, 0.2])],
)
def test_places_keep_the_fused_scores_best_first(fused: list[float], expected: list[float]) -> None:
    assert transplanted(fused) == expected


@pytest.mark.parametrize(
    ("answer", "count", "ranking"),
    [
        ("3, 1, 2", 3, [2, 0, 1]),
        ("[3] > [1] > [2]", 3, [2, 0, 1]),
        ("Ranking: 2\n(then the rest)", 3, [1, 0, 2]),  # unnamed passages follow in fused order
        ("2, 2, 9, 0, 1", 3, [1, 0, 2]),  # repeats and numbers out of range are ignored
        ("4,3,2,1", 4, [3, 2, 1, 0]),
    ],
)
def test_a_ranking_is_read_from_any_numbers_in_the_answer(
    answer: str, count: int, ranking: list[int]
) -> None:
    assert ranking_of(answer, count) == ranking


@pytest.mark.parametrize("answer", ["", "They are all relevant.", "0, 7, 12"])
def test_an_answer_naming_no_passage_is_not_understood(answer: str) -> None:
    with pytest.raises(RerankError, match="named no passage"):
        ranking_of(answer, 5)


def test_scores_of_a_ranking_give_back_that_ranking() -> None:
    ranking = [2, 0, 3, 1]
    assert reordered(scores_of(ranking)) == ranking


def test_the_prompt_numbers_short_passages_after_the_query() -> None:
    prompt = ranking_prompt("  sourdough\nstarter ", ["Loaf. " + "flour " * 200, "Notes. water"])
    lines = prompt.splitlines()
    assert lines[0] == "Query: sourdough starter"
    assert lines[3].startswith("[1] Loaf. flour") and len(lines[3]) <= 4 + 300
    assert lines[4] == "[2] Notes. water"
    assert lines[-1] == "Rank all 2 passages, most relevant first."
