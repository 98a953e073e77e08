"""A source's response models are made once and kept: pydantic holds the models it makes for
`SearchResponse[...]` only weakly, so one the garbage collector freed was built again by the
next search (tens of milliseconds, often at the first search after start)."""

from __future__ import annotations

import gc
import weakref

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
