"""Per-request config, the pure part: decoding, key filtering, clamping, warnings (tables)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from mcp_types import CallToolResult, TextContent

from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.request_config import BOUNDS, CONFIG_KEYS, RequestConfig, parse
from knowledge_mcp.server.request_defaults import wire_with_warnings, with_warnings


def b64(value: Any, *, urlsafe: bool = False, strip: bool = False) -> str:
    raw = json.dumps(value).encode()
    text = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(raw).decode()
    return text.rstrip("=") if strip else text


@pytest.mark.parametrize(
    ("raw", "values"),
    [
        (b64({"snippet_length": 120}), {"snippet_length": 120}),
        (
            b64({"max_tokens": 900, "order_by": "recent"}, urlsafe=True, strip=True),
            {"max_tokens": 900, "order_by": "recent"},
        ),
        ('{"sibling_window": 3}', {"sibling_window": 3}),
        (
            base64.b64encode(b'{"a":">>>?","max_tokens":64}').decode().replace("+", " "),
            {"max_tokens": 64},
        ),  # plain JSON where the carrier allows it
        ({"chars_per_token": 3}, {"chars_per_token": 3}),  # an object in the initialize params
        (b64({"snippet_length": 200.0}), {"snippet_length": 200}),  # an integral float is an integer
        (b64({}), {}),
        (None, {}),
    ],
)
def test_valid_configs_give_their_values_without_warnings(raw: Any, values: dict[str, Any]) -> None:
    config = parse(raw)
    assert dict(config.values) == values
    assert config.warnings == ()


@pytest.mark.parametrize(
    ("key", "value", "used", "range_text"),
    [
        ("snippet_length", 5, 50, "50..1000"),
        ("snippet_length", 5000, 1000, "50..1000"),
        ("max_tokens", 1, 50, "50..32000"),
        ("max_tokens", 10**9, 32000, "50..32000"),
        ("sibling_window", -1, 0, "0..20"),
        ("sibling_window", 99, 20, "0..20"),
        ("chars_per_token", 0, 1, "1..10"),
        ("chars_per_token", 11, 10, "1..10"),
    ],
)
def test_out_of_range_values_are_clamped_with_a_warning_naming_key_and_range(
    key: str, value: int, used: int, range_text: str
) -> None:
    config = parse(b64({key: value}))
    assert dict(config.values) == {key: used}
    (warning,) = config.warnings
    assert key in warning and range_text in warning and str(used) in warning


def test_bounds_are_the_settings_bounds() -> None:
    for key, (low, high) in BOUNDS.items():
        Settings(**{key: low})
        Settings(**{key: high})
        for outside in (low - 1, high + 1):
            with pytest.raises(ValueError):
                Settings(**{key: outside})
    assert set(BOUNDS) | {"order_by"} == set(CONFIG_KEYS)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("!!!not base64!!!", "not valid base64"),
        (base64.b64encode(b"{not json").decode(), "not valid JSON"),
        (base64.b64encode(b"\xff\xfe").decode(), "not valid"),  # not UTF-8
        (b64([1, 2]), "must be a JSON object"),
        (b64("snippet_length"), "must be a JSON object"),
        (42, "must be a JSON object"),
        ("A" * 5000, "longer than"),
    ],
)
def test_malformed_configs_are_ignored_with_one_warning(raw: Any, fragment: str) -> None:
    config = parse(raw, "X-Knowledge-Config")
    assert dict(config.values) == {}
    (warning,) = config.warnings
    assert fragment in warning and warning.startswith("X-Knowledge-Config") and "ignored" in warning


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"order_by": "random"}, "order_by must be one of relevance, recent"),
        ({"order_by": 1}, "order_by must be one of relevance, recent"),
        ({"snippet_length": "300"}, "snippet_length must be an integer 50..1000"),
        ({"max_tokens": True}, "max_tokens must be an integer 50..32000"),
        ({"sibling_window": 1.5}, "sibling_window must be an integer 0..20"),
    ],
)
def test_wrongly_typed_values_are_ignored_with_a_warning(data: dict[str, Any], fragment: str) -> None:
    config = parse(b64(data))
    assert dict(config.values) == {}
    assert [fragment in w for w in config.warnings] == [True]


def test_identity_paths_and_unknown_keys_are_ignored_silently() -> None:
    hostile = {
        "user_id": "bob",
        "user": "bob",
        "client_id": "evil",
        "data_dir": "/etc",
        "db_paths": {"notes": "/tmp/bob.db"},
        "jwt_secret": "x",
        "no_auth": True,
        "transport": "stdio",
        "max_tokens": 500,
    }
    config = parse(b64(hostile))
    assert dict(config.values) == {"max_tokens": 500}
    assert config.warnings == ()


def test_later_config_wins_key_by_key_and_keeps_both_warnings() -> None:
    url = RequestConfig({"snippet_length": 100, "max_tokens": 800}, ("from url",))
    init = RequestConfig({"snippet_length": 60}, ("from initialize",))
    merged = init.over(url)
    assert dict(merged.values) == {"snippet_length": 60, "max_tokens": 800}
    assert merged.warnings == ("from url", "from initialize")


def test_warnings_join_the_structured_warnings_and_the_text() -> None:
    result = CallToolResult(
        content=[TextContent(type="text", text="1 result(s)")], structured_content={"warnings": ["w0"]}
    )
    out = with_warnings(result, ("config: bad",))
    assert out.structured_content == {"warnings": ["w0", "config: bad"]}
    assert out.content[0].text == "1 result(s)\nwarning: config: bad"  # type: ignore[union-attr]


def test_a_result_without_a_warnings_field_gets_a_separate_text_block() -> None:
    payload = '{"results": []}'  # e.g. the deep-research `search` alias: its first block is JSON
    result = CallToolResult(content=[TextContent(type="text", text=payload)])
    out = with_warnings(result, ("config: bad",))
    assert out.content[0].text == payload  # type: ignore[union-attr]
    assert out.content[1].text == "warning: config: bad"  # type: ignore[union-attr]
    assert out.structured_content is None


def test_the_wire_form_the_middleware_sees_gets_the_same_treatment() -> None:
    wire = {"content": [{"type": "text", "text": "t"}], "structuredContent": {"warnings": []}}
    out = wire_with_warnings(wire, ("config: bad",))
    assert out["structuredContent"] == {"warnings": ["config: bad"]}
    assert out["content"] == [{"type": "text", "text": "t\nwarning: config: bad"}]
    assert wire["structuredContent"] == {"warnings": []}  # the input is not changed
    bare = wire_with_warnings({"content": [{"type": "text", "text": "{}"}]}, ("w",))
    assert bare["content"] == [{"type": "text", "text": "{}"}, {"type": "text", "text": "warning: w"}]
