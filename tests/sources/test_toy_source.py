"""Adding a source is one package and one registry line: a toy source (`tests/sources/toy/`),
registered the way a built-in one is, imports its files, is found by `knowledge_search` and
reads with `knowledge_get` and `resources/read`, through a real MCP client against the real
server, with nothing else told about it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.registry import SOURCE_NAMES, register_source, unregister_source
from tests.conftest import call, import_into

pytestmark = pytest.mark.anyio

KITE = "Red kite\nA red kite circles over the salt marsh at dusk.\nIts forked tail steers it.\n"
BODY = KITE.partition("\n")[2]


@pytest.fixture
def toy() -> Iterator[None]:
    register_source("tests.sources.toy")
    try:
        yield
    finally:
        unregister_source("toy")


async def test_a_source_registered_in_one_line_is_searched_and_read_as_a_resource(
    toy: None, data_dir: Path, tmp_path: Path, client_factory: Any
) -> None:
    (tmp_path / "toys").mkdir()
    (tmp_path / "toys" / "kite.toy").write_text(KITE, encoding="utf-8")
    summary = await import_into(data_dir, "toy", tmp_path / "toys")
    assert summary.added == 1 and summary.files_failed == 0
    async with client_factory() as client:
        found = await call(client, "knowledge_search", query="forked tail marsh")
        [hit] = found["results"]
        assert hit["uri"].startswith("toy://") and hit["title"] == "Red kite" and hit["lines"] == 2
        read = await client.read_resource(hit["uri"])
        [content] = read.contents
        assert content.text == BODY and content.mime_type == "text/x-toy"
        got = await call(client, "knowledge_get", uri=hit["uri"], retrieval={"mode": "full"})
        assert got["content"] == BODY and got["meta"]["lines"] == 2
        templates = (await client.list_resource_templates()).resource_templates
        assert {(t.uri_template, t.title) for t in templates} >= {("toy://{toy_id}", "Toy")}
        tools = {t.name: t for t in (await client.list_tools()).tools}
        sources = tools["knowledge_search"].input_schema["properties"]["sources"]["items"]["enum"]
        assert sources == [*SOURCE_NAMES] and sources[-1] == "toy"
        assert "toy_search" not in tools  # it declared no tools of its own


async def test_an_unregistered_source_is_gone_from_the_server_built_after(client_factory: Any) -> None:
    register_source("tests.sources.toy")
    unregister_source("toy")
    async with client_factory() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        sources = tools["knowledge_search"].input_schema["properties"]["sources"]["items"]["enum"]
        assert "toy" not in sources and "toy" not in SOURCE_NAMES
        found = await client.call_tool("knowledge_search", {"query": "kite", "sources": ["toy"]})
        assert found.is_error


async def test_a_cut_resource_of_a_source_without_tools_points_only_at_knowledge_get(
    toy: None, data_dir: Path, tmp_path: Path, client_factory: Any
) -> None:
    body = " ".join(f"Kite {i} rides the thermals over the marsh." for i in range(120))
    (tmp_path / "toys").mkdir()
    (tmp_path / "toys" / "long.toy").write_text(f"Long kite\n{body}", encoding="utf-8")
    await import_into(data_dir, "toy", tmp_path / "toys")
    async with client_factory(resource_max_chars=2000) as client:
        [hit] = (await call(client, "knowledge_search", query="thermals"))["results"]
        text = (await client.read_resource(hit["uri"])).contents[0].text
        head, _, tail = text.partition("\n\n[truncated: ")
        assert body.startswith(head) and len(head) <= 2000
        assert f'knowledge_get(uri="{hit["uri"]}"' in tail and "toy_get" not in tail


def test_a_second_source_of_the_same_name_is_refused(toy: None) -> None:
    with pytest.raises(ValueError, match="'toy' is registered already"):
        register_source("tests.sources.toy")
    assert SOURCE_NAMES.count("toy") == 1
