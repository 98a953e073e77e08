"""The import's JSON encoders write exactly what `json.JSONEncoder(ensure_ascii=False, ...)` writes
(stored tags and meta, and the text content hashes are taken of, never change)."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import pytest

from knowledge_mcp.sources.text.jsontext import json_encoder

VALUES: list[Any] = [
    "plain ascii",
    'quote " backslash \\ newline \n tab \t bell \x07',
    "delete \x7f only the ascii escaper escapes",
    "naïve café, 日本語, 😀",
    "lone \ud800 surrogate",
    "".join(map(chr, range(300))),
    "",
    1,
    -2.5,
    math.inf,
    math.nan,
    True,
    None,
    [],
    {},
    ("a", 1),
    {"b": 1, "a": [1, {"z": None, "y": "é"}]},
    {"headings": ["Intro", "Étapes"], "file_name": "dal.md"},
    {1: "int key", "2": "str key"},
    [dt.date(2024, 1, 2), dt.datetime(2024, 1, 2, 3, 4, 5)],
]
SETTINGS = [{}, {"default": str}, {"sort_keys": True, "default": str}]


def encoded(encode: Any, value: Any) -> Any:
    try:
        return encode(value)
    except Exception as exc:
        return type(exc)


@pytest.mark.parametrize("settings", SETTINGS, ids=[str(sorted(s)) for s in SETTINGS])
def test_the_encoders_write_what_json_writes_for_every_kind_of_value(settings: dict[str, Any]) -> None:
    ours = json_encoder(**settings)
    theirs = json.JSONEncoder(ensure_ascii=False, **settings).encode
    for value in VALUES:
        assert encoded(ours, value) == encoded(theirs, value), value


def test_a_value_json_cannot_write_is_refused_as_json_refuses_it() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_encoder()([object()])
    with pytest.raises(TypeError):
        json_encoder(sort_keys=True)({1: "a", "b": 2})
