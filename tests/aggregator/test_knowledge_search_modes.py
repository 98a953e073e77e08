"""knowledge_search passes `mode` to every source and says what each source could not do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, call, import_into, score_types

pytestmark = pytest.mark.anyio


async def test_a_source_without_vectors_makes_the_answer_degraded_and_named(
    data_dir: Path, client_factory: Any
) -> None:
    await import_into(data_dir, "prompts", FIXTURES / "prompts")
    async with client_factory() as client:
        response = await call(client, "knowledge_search", query="summarize a long document")
        assert response["query_type"] == "mixed"
        assert response["degraded"] is True
        assert "prompts: dense index 0 % built" in response["provider_hint"]
        assert response["results"] and set(score_types(response)) == {"fts"}

        lexical = await call(client, "knowledge_search", query="summarize a long document", mode="lexical")
        assert "degraded" not in lexical
        assert [r["uri"] for r in lexical["results"]] == [r["uri"] for r in response["results"]]


async def test_an_unknown_mode_is_refused_with_the_allowed_ones(data_dir: Path, client_factory: Any) -> None:
    async with client_factory() as client:
        result = await client.call_tool("knowledge_search", {"query": "x", "mode": "fuzzy"})
        assert result.is_error
        text = result.content[0].text
        assert "mode" in text and "semantic" in text
