"""`{{var}}` placeholders: which arguments a prompt has, their defaults, and rendering (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from knowledge_mcp.sources.prompts.placeholders import (
    Argument,
    arguments,
    declared,
    missing,
    placeholders,
    render,
    values_for,
)


@pytest.mark.parametrize(
    ("texts", "names"),
    [
        (["Tone: {{tone}}\nDraft: {{draft}}"], ["tone", "draft"]),
        (["{{ topic }} and {{topic}} again"], ["topic"]),
        (["{{a}}", "{{b}} then {{a}}"], ["a", "b"]),
        (["{{random::a,b}} {{ 1bad }} {{}}"], []),
        (["{{char}} greets {{user}}"], ["char", "user"]),
        (["{{job.id}} {{log-path}}"], ["job.id", "log-path"]),
        (["no placeholders at all"], []),
    ],
)
def test_placeholders_are_the_names_in_double_braces_in_order_once(
    texts: list[str], names: list[str]
) -> None:
    assert placeholders(texts) == names


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("Hi {{name}}!", {"name": "Ada"}, "Hi Ada!"),
        ("Hi {{ name }}!", {"name": "Ada"}, "Hi Ada!"),
        ("{{a}}{{b}}", {"a": "1"}, "1{{b}}"),
        ("{{a}}", {"a": "{{b}}"}, "{{b}}"),
        ("{{a}}", {"a": ""}, ""),
    ],
)
def test_render_fills_the_named_placeholders_and_keeps_the_others(
    text: str, values: dict[str, str], expected: str
) -> None:
    assert render(text, values) == expected


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"arguments": {"tone": "friendly"}}, {"tone": {"default": "friendly"}}),
        (
            {"variables": {"cluster": {"required": True}, "job_id": {"default": "unknown"}}},
            {"cluster": {"required": True}, "job_id": {"default": "unknown"}},
        ),
        (
            {"args": [{"name": "input", "description": "The text", "required": True}]},
            {"input": {"description": "The text", "required": True}},
        ),
        ({"inputs": ["a", "b"]}, {"a": {}, "b": {}}),
        ({"arguments": {"n": 3, "flag": False}}, {"n": {"default": "3"}, "flag": {"default": "false"}}),
        ({"arguments": {"bad name": "x", "ok": None}}, {"ok": {}}),
        ({"arguments": "tone"}, {}),
        ({}, {}),
    ],
)
def test_declared_arguments_read_every_shape_a_prompt_file_uses(obj: dict[str, Any], expected: Any) -> None:
    assert declared(obj) == expected


def test_an_argument_is_required_unless_it_has_a_default_or_says_it_is_optional() -> None:
    specs = {"tone": {"default": "friendly"}, "cc": {"required": False}, "to": {"description": "Who"}}
    assert arguments(["to", "tone", "cc", "draft"], specs) == [
        Argument("to", "Who", None, True),
        Argument("tone", None, "friendly", False),
        Argument("cc", None, None, False),
        Argument("draft", None, None, True),
    ]


def test_missing_names_only_required_arguments_not_given_and_values_fall_back_to_defaults() -> None:
    args = arguments(["to", "tone", "cc"], {"tone": {"default": "friendly"}, "cc": {"required": False}})
    assert missing(args, {}) == ["to"]
    assert missing(args, {"to": ""}) == []
    assert values_for(args, {"to": "Ana"}) == {"to": "Ana", "tone": "friendly", "cc": ""}
    assert values_for(args, {"to": "Ana", "tone": "curt"})["tone"] == "curt"
