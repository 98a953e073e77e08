"""Items as MCP resources: a search hit's uri reads as that item's text, with its MIME type, within
the cap; the marker's call reads on from the cut; static resources and listing keep working."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from knowledge_mcp.sources.registry import ENTRIES, SOURCE_NAMES, get_source
from knowledge_mcp.sources.storage.db import database_path, open_database
from tests.conftest import FIXTURES, ROOT, call, import_into, serve_args

pytestmark = pytest.mark.anyio

# A word each source's fixtures hold, so a search of that source alone finds something.
QUERIES = {
    "notes": "birds",
    "media": "pasta",
    "chats": "heat pump",
    "characters": "captain",
    "prompts": "email",
}
BIRDS = "Field guide to North European birds"  # a real-size note of the fixtures (66 kB)


@pytest.fixture
async def imported(data_dir: Path) -> Path:
    for source in SOURCE_NAMES:
        await import_into(data_dir, source, FIXTURES / source)
    return data_dir


async def stored_text(data_dir: Path, uri: str) -> str:
    """The item's text as the database holds it (what a resource read must give back)."""
    scheme, _, item_id = uri.partition("://")
    source = get_source(scheme)
    db = await open_database(database_path(data_dir, "local", scheme), source.migrations)
    try:
        item, _ = await source.load_item(db, item_id)
        return str(item["content"])
    finally:
        await db.close()


async def first_hit(client: Any, source: str, query: str | None = None) -> dict[str, Any]:
    found = await call(client, "knowledge_search", query=query or QUERIES[source], sources=[source])
    assert found["results"], f"nothing found in {source}"
    return dict(found["results"][0])


async def test_a_search_hits_uri_reads_as_that_items_text_with_its_mime_type_in_every_source(
    client_factory: Any, imported: Path
) -> None:
    async with client_factory() as client:
        for source in SOURCE_NAMES:
            uri = (await first_hit(client, source))["uri"]
            read = await client.read_resource(uri)
            [content] = read.contents
            assert content.uri == uri and content.mime_type == ENTRIES[source].mime_type
            assert content.text == await stored_text(imported, uri), source


async def test_the_five_templates_are_listed_and_media_types_still_reads_beside_media_id(
    client_factory: Any, imported: Path
) -> None:
    async with client_factory() as client:
        templates = {
            t.uri_template: t.mime_type for t in (await client.list_resource_templates()).resource_templates
        }
        assert templates["notes://{id}"] == "text/markdown"
        assert templates["chats://{conversation_id}"] == "text/plain"
        assert {"media://{id}", "characters://{id}", "prompts://{id}"} <= set(templates)
        types = json.loads((await client.read_resource("media://types")).contents[0].text)
        assert {t["media_type"] for t in types["media_types"]} >= {"email", "pdf", "transcript"}


async def test_a_large_item_is_capped_with_a_marker_whose_call_reads_on_from_the_cut(
    client_factory: Any, imported: Path
) -> None:
    async with client_factory(resource_max_chars=2000) as client:
        uri = (await first_hit(client, "notes", f'"{BIRDS}"'))["uri"]
        full = await stored_text(imported, uri)
        text = (await client.read_resource(uri)).contents[0].text
        head, _, tail = text.partition("\n\n[truncated: ")
        assert 1600 <= len(head) <= 2000 and full.startswith(head)
        assert tail.startswith(f"{len(head):,} of {len(full):,} characters shown")
        loc = json.loads(re.search(r'knowledge_get\(uri="[^"]+", loc=(\{[^}]*\})', tail).group(1))  # type: ignore[union-attr]
        assert f'notes_get(note_id="{uri.split("://")[1]}"' in tail
        more = await call(
            client, "knowledge_get", uri=uri, loc=loc, retrieval={"mode": "full", "max_tokens": 300}
        )
        rest = full[len(head) :].lstrip()
        assert more["content"][:200] == rest[:200]


async def test_a_capped_chat_reads_on_from_the_message_it_was_cut_in(
    client_factory: Any, imported: Path
) -> None:
    async with client_factory(resource_max_chars=1000) as client:
        hits = (await call(client, "chats_search", query=QUERIES["chats"]))["results"]
        texts = {h["uri"]: await stored_text(imported, h["uri"]) for h in hits}
        uri = max(texts, key=lambda u: len(texts[u]))
        assert len(texts[uri]) > 1000, "the fixtures hold no chat longer than the cap"
        text = (await client.read_resource(uri)).contents[0].text
        head, _, tail = text.partition("\n\n[truncated: ")
        loc = json.loads(re.search(r"loc=(\{[^}]*\})", tail).group(1))  # type: ignore[union-attr]
        assert "message_index" in loc and "approx_offset" in loc
        more = await call(
            client, "knowledge_get", uri=uri, loc=loc, retrieval={"mode": "full", "max_tokens": 200}
        )
        first = more["content"][0]["text"]
        assert first[:40] in texts[uri][len(head) :]


async def test_an_unknown_item_is_invalid_params_naming_the_uri(client_factory: Any, imported: Path) -> None:
    async with client_factory() as client:
        for uri in ("notes://0000000000000000", "chats://nope", "prompts://missing"):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert refused.value.code == INVALID_PARAMS and uri in refused.value.message
        assert (await client.list_tools()).tools  # the connection still serves


async def test_resources_list_is_the_static_resources_then_a_bounded_page_of_recent_items(
    client_factory: Any, imported: Path
) -> None:
    async with client_factory(resource_list_limit=5) as client:
        listed = (await client.list_resources()).resources
        assert listed[0].uri == "media://types" and len(listed) == 6
        stamps = [r.annotations.last_modified for r in listed[1:] if r.annotations is not None]
        assert len(stamps) == 5 and stamps == sorted(stamps, reverse=True)
        assert all(r.title and r.mime_type == ENTRIES[r.uri.split("://")[0]].mime_type for r in listed[1:])
    async with client_factory(resource_list_limit=0) as client:
        assert [r.uri for r in (await client.list_resources()).resources] == ["media://types"]


async def test_over_stdio_a_hits_uri_reads_as_its_text(imported: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=serve_args(imported), cwd=ROOT)
    async with Client(params) as client:
        for source in ("notes", "chats"):
            uri = (await first_hit(client, source))["uri"]
            content = (await client.read_resource(uri)).contents[0]
            assert content.mime_type == ENTRIES[source].mime_type
            assert content.text == await stored_text(imported, uri)
