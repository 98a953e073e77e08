"""A source's response models are made once and kept: pydantic holds the models it makes for
`SearchResponse[...]` only weakly, so one the garbage collector freed was built again by the
next search (tens of milliseconds, often at the first search after start)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from pydantic import PrivateAttr

from knowledge_mcp.sources.models import ResultItem, SearchResponse
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.source import get_response, search_response


class ProbeResult(ResultItem):
    pass


def test_a_search_response_model_outlives_a_garbage_collection() -> None:
    made = weakref.ref(search_response(ProbeResult))
    gc.collect()
    assert made() is not None
    assert search_response(ProbeResult) is made()


def test_a_get_response_model_outlives_a_garbage_collection() -> None:
    made = weakref.ref(get_response(ProbeResult))
    gc.collect()
    assert made() is not None
    assert get_response(ProbeResult) is made()


def test_the_kept_model_is_the_parametrized_search_response_of_each_source() -> None:
    for source in SOURCES.values():
        model = search_response(source.result_model)
        assert issubclass(model, SearchResponse)
        assert model.model_fields["results"].annotation == list[source.result_model]


class ListedResult(ResultItem):
    _marks: list[str] = PrivateAttr(default_factory=list)


HIT: dict[str, Any] = {
    "id": "a",
    "source": "notes",
    "uri": "notes://a",
    "title": "A",
    "snippet": "",
    "score": 0.5,
    "rank": 1,
    "created_at": "2026-01-01T00:00:00Z",
    "last_modified": "2026-01-01T00:00:00Z",
}


def test_every_source_s_result_starts_with_its_private_defaults_in_a_dict_of_its_own() -> None:
    for source in SOURCES.values():
        model = source.result_model
        first, second = model.model_validate(HIT), model(**HIT)
        defaults = {n: a.get_default() for n, a in model.__private_attributes__.items()}
        assert first.private == second.private == defaults and first.private is not second.private
        first.private["_keep"] = frozenset({"summary"})
        assert second.private["_keep"] == frozenset() and model.model_construct(**HIT).private == defaults


def test_a_result_model_with_a_mutable_private_default_gives_each_result_its_own() -> None:
    first, second = ListedResult.model_validate(HIT), ListedResult.model_validate(HIT)
    first._marks.append("x")
    assert second._marks == [] and first.private["_passage"] is False
