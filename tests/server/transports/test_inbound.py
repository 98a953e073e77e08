"""inbound.read_message: every message read off the wire is passed on or answered by the spec."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_types import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from knowledge_mcp.server.transports.inbound import MAX_DEPTH, MAX_DIGITS, Refusal, read_message


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"query": "x"}
    for _ in range(levels):
        value = {"a": value}
    return value


def call(message_id: Any, arguments: Any) -> str:
    params = {"name": "notes_search", "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": message_id, "method": "tools/call", "params": params})


LONE_SURROGATE = call(11, {"query": "__"}).replace("__", "\\ud800")
HUGE_INTEGER = call(14, {"limit": 0}).replace('"limit": 0', '"limit": ' + "9" * 5000)
TOO_DEEP_TO_PARSE = (
    '{"jsonrpc": "2.0", "id": "deep", "method": "x", "params": {"a": ' + "[" * 5000 + "]" * 5000 + "}}"
)

REFUSED = [
    # (raw message, code, id answered, a phrase of the message)
    ('{"jsonrpc": "2.0", "id": 10, "method": "tools/list"', -32700, None, "not valid JSON"),
    ("", -32700, None, "not valid JSON"),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"q": "\xff"}}', -32700, None, "not valid JSON"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"q": NaN}}', -32700, None, "not valid JSON"),
    ("[]", -32600, None, "batches"),
    ('"tools/list"', -32600, None, "one JSON object"),
    (json.dumps({"id": 17, "method": "tools/list"}), -32600, 17, '"jsonrpc" must be "2.0"'),
    (json.dumps({"jsonrpc": "1.0", "id": 17, "method": "tools/list"}), -32600, 17, '"jsonrpc" must be "2.0"'),
    (json.dumps({"jsonrpc": "2.0", "id": 18, "method": 5}), -32600, 18, '"method" must be a string'),
    (json.dumps({"jsonrpc": "2.0", "method": 5}), -32600, None, '"method" must be a string'),
    (
        json.dumps({"jsonrpc": "2.0", "id": 15, "method": "x", "params": [1]}),
        -32600,
        15,
        '"params" must be an object',
    ),
    (
        json.dumps({"jsonrpc": "2.0", "id": "s", "method": "x", "params": "x"}),
        -32600,
        "s",
        '"params" must be',
    ),
    (json.dumps({"jsonrpc": "2.0", "id": 1.5, "method": "x"}), -32600, None, '"id" must be'),
    (json.dumps({"jsonrpc": "2.0", "id": True, "method": "x"}), -32600, None, '"id" must be'),
    (json.dumps({"jsonrpc": "2.0", "id": 3}), -32600, 3, 'needs a "method"'),
    (LONE_SURROGATE, -32602, 11, "params.arguments.query holds a lone surrogate"),
    (call(12, nested(200)), -32602, 12, f"nested more than {MAX_DEPTH} levels"),
    (call(13, nested(500)), -32602, 13, f"nested more than {MAX_DEPTH} levels"),
    (
        HUGE_INTEGER,
        -32602,
        14,
        f"params.arguments.limit is a number of 5000 digits; numbers may have at most {MAX_DIGITS}",
    ),
    (call(4, {"x": 0}).replace('"x": 0', '"x": 1e999'), -32602, 4, "beyond the range"),
    (call(5, {"__": 0}).replace("__", "\\udc00"), -32602, 5, "key holding a lone surrogate"),
    (call(6, None), -32602, 6, "params.arguments must be an object of the tool's arguments ({} for none)"),
    (TOO_DEEP_TO_PARSE, -32600, "deep", f"nested more than {MAX_DEPTH} levels"),
    ('{"jsonrpc": "2.0", "id": 7, "method": "x\\ud800"}', -32600, 7, "method holds a lone surrogate"),
]


@pytest.mark.parametrize(("raw", "code", "answered_id", "phrase"), REFUSED)
def test_a_message_no_handler_can_take_is_answered_with_the_specs_code_and_its_id(
    raw: str | bytes, code: int, answered_id: Any, phrase: str
) -> None:
    found = read_message(raw)
    assert isinstance(found, Refusal)
    assert found.answer is not None
    assert (found.answer.error.code, found.answer.id) == (code, answered_id)
    assert phrase in found.answer.error.message
    found.answer.model_dump_json().encode("utf-8")  # the answer itself is valid UTF-8 JSON


def test_an_answer_never_repeats_the_value_that_was_refused() -> None:
    raw = call(1, {"query": "secret words", "limit": 0}).replace('"limit": 0', '"limit": ' + "9" * 5000)
    found = read_message(raw)
    assert isinstance(found, Refusal) and found.answer is not None
    assert "secret" not in found.answer.error.message and "99999" not in found.answer.error.message


def test_a_long_path_is_cut_to_its_first_keys() -> None:
    found = read_message(call(1, nested(500)))
    assert isinstance(found, Refusal) and found.answer is not None
    assert len(found.answer.error.message) < 200


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps({"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": nested(100)}}),
        '{"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": "\\ud800"}}',
        json.dumps({"jsonrpc": "2.0", "method": "notifications/x", "params": [1]}),
    ],
)
def test_a_refused_notification_is_never_answered(raw: str) -> None:
    found = read_message(raw)
    assert isinstance(found, Refusal)
    assert found.answer is None


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (call(1, {"query": "levain", "limit": 5}), JSONRPCRequest),
        (call("a", {"query": "naïve café 😀"}), JSONRPCRequest),
        (call(1, {"limit": int("9" * MAX_DIGITS)}), JSONRPCRequest),
        (call(1, nested(MAX_DEPTH - 5)), JSONRPCRequest),
        (json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), JSONRPCNotification),
        (json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}), JSONRPCResponse),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}\n', JSONRPCRequest),
    ],
)
def test_a_valid_message_passes_on(raw: str | bytes, kind: type) -> None:
    assert isinstance(read_message(raw), kind)


def test_a_top_level_key_that_merely_starts_with_params_is_not_the_params() -> None:
    found = read_message('{"jsonrpc": "2.0", "id": 1, "method": "x", "paramsx": "\\ud800"}')
    assert isinstance(found, Refusal) and found.answer is not None
    assert found.answer.error.code == -32600
