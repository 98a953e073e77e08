"""Results are made without validation (`models.trusted`): every source's values must already be
of their fields' types, so that the model is the one `model_validate` would have made. A source
whose `fields()` returns a wrong type (a tuple, a dict for a nested model, an int for a float)
fails here instead of showing the user a different wire form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from knowledge_mcp.sources.models import Loc, NoteResult, trusted
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from knowledge_mcp.sources.wire import dump

from ..conftest import FIXTURES, import_into
from .test_response_models import HIT

pytestmark = pytest.mark.anyio

QUERIES = ("the", "email", "prompt", "character", "meeting notes", "recipe")


def same_model(made: BaseModel, validated: BaseModel) -> None:
    """The same model: its values and their types, fields set, private attributes, wire form."""
    assert type(made) is type(validated)
    assert repr(made.__dict__) == repr(validated.__dict__)  # 1 and 1.0, a tuple and a list differ
    assert made.model_fields_set == validated.model_fields_set
    assert made.__pydantic_private__ == validated.__pydantic_private__
    assert made.model_dump_json() == validated.model_dump_json()
    assert dump(made) == dump(validated)


@pytest.mark.parametrize("name", sorted(SOURCES))
async def test_every_result_of_a_source_s_fixtures_is_the_one_validation_makes(
    tmp_path: Path, name: str
) -> None:
    source = SOURCES[name]
    await import_into(tmp_path, name, FIXTURES / name)
    db = await open_database(database_path(tmp_path, "local", name), source.migrations)
    try:
        store = SqliteStore(db, name)
        items = await store.items()
        assert items, f"no {name} fixtures imported"
        made = 0
        for item in items:
            for chunk in [None, *await store.chunks_of(int(item["id"]))]:
                hit = {"score": 0.25, "rank": 3, "match_count": 2, "snippet": "a snippet"}
                values = source.result_values(item, chunk, hit)
                same_model(
                    trusted(source.result_model, dict(values)), source.result_model.model_validate(values)
                )
                made += 1
        assert made > len(items)
        # the search pipeline's results too (its scores, ranks, match counts, locs, details)
        searched = 0
        for query in QUERIES:
            response = await source.search(store, SearchRequest(query, limit=50), Defaults())
            for result in response.results:
                again = type(result).model_validate(result.model_dump())
                assert repr(result.__dict__) == repr(again.__dict__)
                searched += 1
        assert searched > 0
    finally:
        await db.close()


class Nested(BaseModel):
    words: list[str] = Field(default_factory=list)
    at: Loc | None = None
    count: int = 1


def test_a_trusted_model_has_its_defaults_its_own_lists_and_the_fields_it_was_given() -> None:
    first, second = trusted(Nested, {"count": 2}), trusted(Nested, {"count": 2})
    assert first == Nested.model_validate({"count": 2}) and first.model_fields_set == {"count"}
    first.words.append("x")
    assert second.words == []
    loc = trusted(Loc, {"chunk_index": 0, "approx_offset": 12})
    assert loc == Loc(chunk_index=0, approx_offset=12) and loc.model_fields_set == {
        "chunk_index",
        "approx_offset",
    }


def test_a_trusted_result_starts_with_private_defaults_of_its_own() -> None:
    values: dict[str, Any] = dict(HIT)
    first, second = trusted(NoteResult, values), trusted(NoteResult, values)
    first.private["_keep"] = frozenset({"summary"})
    assert second.private == NoteResult.model_validate(values).private
    assert second.private["_keep"] == frozenset()


def test_a_model_keeping_extra_fields_is_validated() -> None:
    class Open(BaseModel, extra="allow"):
        count: int = 1

    made = trusted(Open, {"count": "2", "more": 1})
    assert made.count == 2 and made.model_extra == {"more": 1}
