"""Resources and prompts with `item_store = "postgresql"`: resources/read of a search hit is the
item's full text (as knowledge_get full, and as the SQLite server reads it), resources/list the
same recent items, the prompt library imported into PostgreSQL lists and renders, and a write
into PostgreSQL tells the writer's client (real MCP clients of two servers on the same files)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp_types import ResourceListChangedNotification, ResourceUpdatedNotification

from knowledge_mcp.sources.registry import SOURCE_NAMES
from tests.server.resources.test_notifications import Inbox, subscribe

from ...conftest import FIXTURES, call
from .conftest import Importing

pytestmark = pytest.mark.anyio

QUERIES = {
    "notes": "birds",
    "media": "pasta",
    "chats": "heat pump",
    "characters": "captain",
    "prompts": "email",
}
WHOLE = {"resource_max_chars": 1_000_000}
"""No cap: the resource is the item's whole text."""


async def first_uri(client: Any, source: str) -> str:
    found = await call(client, "knowledge_search", query=QUERIES[source], sources=[source])
    assert found["results"], f"nothing found in {source}"
    return str(found["results"][0]["uri"])


async def test_a_postgresql_hit_reads_as_the_sqlite_servers_resource_in_every_source(
    pg_servers: Any, import_both: Importing
) -> None:
    for source in SOURCE_NAMES:
        await import_both(source)
    async with pg_servers("sqlite", **WHOLE) as lite, pg_servers("postgresql", **WHOLE) as pg:
        for source in SOURCE_NAMES:
            uri = await first_uri(pg, source)
            assert uri == await first_uri(lite, source), source
            [ours] = (await pg.read_resource(uri)).contents
            [theirs] = (await lite.read_resource(uri)).contents
            assert ours.text == theirs.text and ours.mime_type == theirs.mime_type, source


async def test_a_postgresql_notes_resource_is_knowledge_get_full(
    pg_servers: Any, import_both: Importing
) -> None:
    await import_both("notes")
    async with pg_servers("postgresql", **WHOLE) as pg:
        found = await call(pg, "notes_search", query="country loaf levain")
        uri = found["results"][0]["uri"]  # a note shorter than knowledge_get's default budget
        [read] = (await pg.read_resource(uri)).contents
        full = await call(pg, "knowledge_get", uri=uri, retrieval={"mode": "full"})
    assert len(read.text) > 1000 and read.text == full["content"]


async def test_resources_list_offers_the_same_recent_items_as_sqlite(
    pg_servers: Any, import_both: Importing
) -> None:
    for source in ("notes", "media", "prompts"):
        await import_both(source)
    async with (
        pg_servers("sqlite", resource_list_limit=12) as lite,
        pg_servers("postgresql", resource_list_limit=12) as pg,
    ):
        ours = [(r.uri, r.name, r.description) for r in (await pg.list_resources()).resources]
        theirs = [(r.uri, r.name, r.description) for r in (await lite.list_resources()).resources]
    assert len([uri for uri, _, _ in ours if "://" in uri and not uri.startswith("media://types")]) >= 12
    assert sorted(ours) == sorted(theirs)


async def test_prompts_imported_into_postgresql_list_and_render(
    pg_servers: Any, import_both: Importing
) -> None:
    await import_both("prompts")
    args = {"tone": "warm", "recipient": "Priya (landlord)", "draft": "hi, the boiler broke again"}
    async with pg_servers("postgresql") as pg, pg_servers("sqlite") as lite:
        listed = {p.name: p for p in (await pg.list_prompts()).prompts}
        got = await pg.get_prompt("email-polisher", args)
        same = await lite.get_prompt("email-polisher", args)
    assert set(listed) == {
        "code-reviewer",
        "email-polisher",
        "meeting-summarizer",
        "socratic-tutor",
        "sql-explainer",
    }
    assert [(a.name, a.required) for a in listed["email-polisher"].arguments or []] == [
        ("tone", True),
        ("recipient", True),
        ("draft", True),
    ]
    texts = [m.content.text for m in got.messages]  # type: ignore[union-attr]
    assert texts[1] == "Tone: warm\nRecipient: Priya (landlord)\n\nDraft:\nhi, the boiler broke again"
    assert got.messages == same.messages


async def test_a_write_into_postgresql_tells_the_writers_client(
    pg_servers: Any, tmp_path: Path, pg_url: str, data_dir: Path
) -> None:
    vault = Path(shutil.copytree(FIXTURES / "notes" / "recipes", tmp_path / "vault"))
    inbox = Inbox()
    client = pg_servers("postgresql", notes_dir=vault)
    client.mode, client.message_handler = "legacy", inbox
    async with client:
        first = await call(
            client, "notes_create", title="Boiler", content="The boiler needs a service in May."
        )
        await inbox.next_of(ResourceListChangedNotification)
        await subscribe(client, first["uri"])
        await call(client, "notes_update", note_id=first["uri"], append="Booked for the 12th.")
        updated = await inbox.next_of(ResourceUpdatedNotification)
        [read] = (await client.read_resource(first["uri"])).contents
    assert updated.params.uri == first["uri"] and "Booked for the 12th." in read.text
