"""The published search output schema: a hit's fields told in words, checked by `required`
alone, and no `$ref` to look up, so a client validates a page of 100 hits without descending into
each of their fields or resolving a reference per hit."""

from __future__ import annotations

import json
from typing import Any

from jsonschema.validators import validator_for

from knowledge_mcp.server.tool_list import inline_refs, lean_schema
from knowledge_mcp.sources.wire import Hit, SearchOutput

PAGE: dict[str, Any] = {"count": 1, "has_more": False, "next_offset": None, "total_estimated": 1}


def _errors(page: dict[str, Any]) -> list[str]:
    schema = lean_schema(SearchOutput.model_json_schema())
    return [e.message for e in validator_for(schema)(schema).iter_errors(page)]


def test_a_hit_names_every_field_with_its_type_and_description_in_words() -> None:
    hit = SearchOutput.model_json_schema()["$defs"]["Hit"]
    assert "properties" not in hit and hit["required"] == ["uri", "title", "score"]
    for name in Hit.model_fields:
        assert f" {name} (" in hit["description"], name
    assert "score (number): 0..1, comparable across sources;" in hit["description"]
    assert "uri (string): <source>://<id>, for the get tools;" in hit["description"]


def test_a_page_of_hits_with_their_source_fields_passes_and_a_hit_without_its_uri_fails() -> None:
    hit = {"uri": "notes://a", "title": "A", "score": 0.5, "snippet": "…", "tags": ["x"], "loc": {}}
    assert _errors({**PAGE, "results": [hit]}) == []
    no_uri = {k: v for k, v in hit.items() if k != "uri"}
    assert _errors({**PAGE, "results": [hit, no_uri]}) == ["'uri' is a required property"]


def test_an_output_schema_is_published_with_its_definitions_inline_unless_they_nest_themselves() -> None:
    published = inline_refs(lean_schema(SearchOutput.model_json_schema()))
    assert "$defs" not in published and "$ref" not in json.dumps(published)
    assert published["properties"]["results"]["items"]["required"] == ["uri", "title", "score"]
    tree = {
        "$defs": {"Node": {"properties": {"kids": {"items": {"$ref": "#/$defs/Node"}}}}},
        "$ref": "#/$defs/Node",
    }
    assert inline_refs(tree) == tree
