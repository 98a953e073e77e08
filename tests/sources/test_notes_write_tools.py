"""notes_create / notes_update through a real in-memory MCP client and the real database: the
file written, the index updated, the duplicate check, optimistic concurrency and the folder
rules."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.notes import source
from knowledge_mcp.sources.notes.writing import duplicates
from knowledge_mcp.sources.notes.writing.stores import SqliteNotes
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.dense.embedder import embedder
from knowledge_mcp.sources.search.dense.indexing import embed_missing
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from knowledge_mcp.sources.text.frontmatter import split_front_matter
from tests.conftest import FIXTURES, call, import_into

pytestmark = pytest.mark.anyio

STARTER = (
    "Feed the sourdough starter twice a day with equal weights of rye flour and water; "
    "keep it near 24 degrees and discard half before each feeding."
)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A copy of the fixture vault (the tests write into it)."""
    return Path(shutil.copytree(FIXTURES / "notes", tmp_path / "vault"))


async def test_write_tools_are_listed_as_not_read_only(client_factory: Any) -> None:
    async with client_factory() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    create, update = tools["notes_create"].annotations, tools["notes_update"].annotations
    assert (
        create.read_only_hint is False
        and create.idempotent_hint is False
        and create.destructive_hint is False
    )
    assert update.read_only_hint is False and update.destructive_hint is True
    assert tools["notes_create"].title and tools["notes_update"].title


async def test_a_created_note_is_a_markdown_file_with_front_matter_found_by_the_next_search(
    data_dir: Path, client_factory: Any
) -> None:
    async with client_factory() as client:
        made = await call(
            client, "notes_create", title="Starter care", content=STARTER, tags=["baking", "#bread"]
        )
        found = await call(client, "notes_search", query="rye starter discard")
    assert made["version"] == 1 and made["uri"] == f"notes://{made['id']}"
    assert made["path"] == "Starter care.md" and made["provider"] in ("lexical", "dense")
    assert "duplicates" not in made and "recommendation" not in made
    path = data_dir / "users" / "local" / "notes" / made["path"]
    front, body = split_front_matter(path.read_text(encoding="utf-8"))
    assert front["title"] == "Starter care" and front["tags"] == ["baking", "bread"]
    assert front["created"] and body.strip() == STARTER
    assert [r["uri"] for r in found["results"]] == [made["uri"]]
    assert found["results"][0]["tags"] == ["baking", "bread"]


async def test_the_same_text_again_is_written_but_answers_review_first_naming_the_first(
    data_dir: Path, client_factory: Any
) -> None:
    async with client_factory() as client:
        first = await call(client, "notes_create", title="Starter care", content=STARTER)
        again = await call(client, "notes_create", title="Starter care", content=STARTER)
        other = await call(
            client, "notes_create", title="Invoices", content="Send the invoice to the client on Friday."
        )
    assert again["path"] == "Starter care 2.md" and again["id"] != first["id"]
    assert again["recommendation"] == "review_first"
    assert again["duplicates"][0] == {"uri": first["uri"], "title": "Starter care", "similarity": 1.0}
    assert "recommendation" not in other and "duplicates" not in other
    assert len(list((data_dir / "users" / "local" / "notes").glob("*.md"))) == 3


async def test_a_lightly_edited_note_is_listed_as_similar(client_factory: Any) -> None:
    edited = STARTER.replace("twice a day", "two times daily").replace("24 degrees", "25 degrees")
    async with client_factory() as client:
        first = await call(client, "notes_create", title="Starter care", content=STARTER)
        near = await call(client, "notes_create", title="Starter routine", content=edited)
    assert near["duplicates"][0]["uri"] == first["uri"]
    assert 0.5 <= near["duplicates"][0]["similarity"] < 1.0


async def test_new_notes_go_into_the_folder_notes_were_imported_from(
    data_dir: Path, vault: Path, client_factory: Any
) -> None:
    await import_into(data_dir, "notes", vault)
    async with client_factory() as client:
        made = await call(
            client,
            "notes_create",
            title="Kickoff follow-up",
            content="Premortem notes.",
            folder="work/meetings",
        )
    assert (vault / "work" / "meetings" / "Kickoff follow-up.md").is_file()
    assert made["path"] == "work/meetings/Kickoff follow-up.md"


async def test_a_configured_notes_dir_wins(
    data_dir: Path, vault: Path, tmp_path: Path, client_factory: Any
) -> None:
    await import_into(data_dir, "notes", vault)
    async with client_factory(notes_dir=tmp_path / "inbox") as client:
        made = await call(client, "notes_create", title="Idea", content="Write tools for notes.")
    assert (tmp_path / "inbox" / "Idea.md").is_file() and made["path"] == "Idea.md"


async def test_a_stale_expected_version_is_refused_and_nothing_changes(
    data_dir: Path, vault: Path, client_factory: Any
) -> None:
    await import_into(data_dir, "notes", vault)
    path = vault / "reading" / "thinking-fast-and-slow.md"
    async with client_factory() as client:
        hit = (await call(client, "notes_search", query="Thinking Fast and Slow Kahneman"))["results"][0]
        changed = await call(
            client, "notes_update", note_id=hit["uri"], append="Reread in 2026.", expected_version=1
        )
        before = path.read_bytes()
        stale = await client.call_tool(
            "notes_update", {"note_id": hit["uri"], "content": "lost edit", "expected_version": 1}
        )
        again = await call(client, "notes_get", note_id=hit["uri"])
    assert changed["version"] == 2 and changed["path"] == "reading/thinking-fast-and-slow.md"
    assert stale.is_error and "expected_version: the note is at version 2, not 1" in stale.content[0].text
    assert path.read_bytes() == before
    assert again["meta"]["version"] == 2
    front, body = split_front_matter(before.decode())
    assert front["author"] == "Daniel Kahneman" and body.rstrip().endswith("Reread in 2026.")


async def test_an_edit_made_outside_counts_as_a_version(
    data_dir: Path, vault: Path, client_factory: Any
) -> None:
    await import_into(data_dir, "notes", vault)
    path = vault / "reading" / "thinking-fast-and-slow.md"
    async with client_factory() as client:
        hit = (await call(client, "notes_search", query="Thinking Fast and Slow Kahneman"))["results"][0]
        path.write_text(path.read_text(encoding="utf-8") + "\nEdited in Obsidian.\n", encoding="utf-8")
        stale = await client.call_tool(
            "notes_update", {"note_id": hit["uri"], "append": "x", "expected_version": 1}
        )
        fresh = await call(
            client, "notes_update", note_id=hit["uri"], append="From the assistant.", expected_version=2
        )
    assert stale.is_error and "version 2, not 1" in stale.content[0].text
    text = path.read_text(encoding="utf-8")
    assert (
        fresh["version"] == 3
        and "Edited in Obsidian." in text
        and text.rstrip().endswith("From the assistant.")
    )


async def test_replacing_a_section_keeps_the_rest_and_the_front_matter(
    data_dir: Path, vault: Path, client_factory: Any
) -> None:
    await import_into(data_dir, "notes", vault)
    path = vault / "reading" / "thinking-fast-and-slow.md"
    original = path.read_text(encoding="utf-8")
    async with client_factory() as client:
        hit = (await call(client, "notes_search", query="Thinking Fast and Slow Kahneman"))["results"][0]
        await call(
            client, "notes_update", note_id=hit["uri"], section="Two systems", content="- one fast, one slow"
        )
        found = await call(client, "notes_search", query="one fast one slow")
        missing = await client.call_tool(
            "notes_update", {"note_id": hit["uri"], "section": "Nope", "content": "x"}
        )
    text = path.read_text(encoding="utf-8")
    assert "- one fast, one slow" in text and "System 2 is lazy" not in text
    assert (
        text.split("## Two systems")[0].replace("modified: '", "modified: ").split("modified:")[0]
        == (original.split("modified:")[0])
    )
    assert found["results"][0]["uri"] == hit["uri"]
    assert missing.is_error and "section: the note has no heading 'Nope'" in missing.content[0].text


@pytest.mark.parametrize("folder", ["../x", "/tmp/x", "a/../../x", ".hidden"])
async def test_a_folder_out_of_the_notes_folder_is_refused(
    data_dir: Path, client_factory: Any, folder: str
) -> None:
    async with client_factory() as client:
        refused = await client.call_tool("notes_create", {"title": "t", "content": "c", "folder": folder})
    assert refused.is_error and "folder: must be a relative sub-folder" in refused.content[0].text
    assert not list(data_dir.parent.rglob("t.md"))


async def test_a_folder_that_links_out_of_the_notes_folder_is_refused(
    data_dir: Path, tmp_path: Path, client_factory: Any
) -> None:
    notes, outside = data_dir / "users" / "local" / "notes", tmp_path / "outside"
    notes.mkdir(parents=True)
    outside.mkdir()
    os.symlink(outside, notes / "escape")
    async with client_factory() as client:
        refused = await client.call_tool(
            "notes_create", {"title": "t", "content": "c", "folder": "escape/sub"}
        )
    assert refused.is_error and "folder: leads out of the notes folder" in refused.content[0].text
    assert not list(outside.rglob("*"))


async def test_an_unknown_note_id_names_the_field(client_factory: Any) -> None:
    async with client_factory() as client:
        missing = await client.call_tool("notes_update", {"note_id": "notes://0000", "content": "x"})
    assert missing.is_error and "note_id: no item with id '0000'" in missing.content[0].text


async def test_a_read_only_server_neither_lists_nor_runs_write_tools(
    data_dir: Path, client_factory: Any
) -> None:
    async with client_factory(read_only=True) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        refused = await client.call_tool("notes_create", {"title": "t", "content": "c"})
    assert "notes_create" not in names and "notes_update" not in names and "notes_search" in names
    assert refused.is_error and "read-only (read_only = true)" in refused.content[0].text
    assert not (data_dir / "users" / "local" / "notes").exists()


async def test_the_duplicate_check_gives_up_past_its_budget(data_dir: Path, client_factory: Any) -> None:
    async with client_factory() as client:
        await call(client, "notes_create", title="Starter care", content=STARTER)
    db = await open_database(database_path(data_dir, "local", "notes"), source.migrations)
    try:
        verdict = await duplicates.check(
            SqliteNotes(SqliteStore(db, "notes")),
            "Starter",
            STARTER,
            exclude=None,
            budget_ms=0.001,
            defaults=Defaults(),
        )
    finally:
        await db.close()
    assert verdict.timed_out and not verdict.duplicates


async def test_with_vectors_the_check_compares_embeddings(
    data_dir: Path, tmp_path: Path, client_factory: Any
) -> None:
    model = embedder()
    if model is None:
        pytest.skip("no embedding model installed (knowledge-mcp[semantic])")
    vault = tmp_path / "small"
    vault.mkdir()
    note = (FIXTURES / "notes" / "reading" / "thinking-fast-and-slow.md").read_text(encoding="utf-8")
    (vault / "kahneman.md").write_text(note, encoding="utf-8")
    (vault / "starter.md").write_text(f"# Starter\n\n{STARTER}\n", encoding="utf-8")
    await import_into(data_dir, "notes", vault)
    db = await open_database(database_path(data_dir, "local", "notes"), source.migrations)
    try:
        await embed_missing(SqliteVectorStore(db, SOURCES["notes"]), model)
    finally:
        await db.close()
    front, body = split_front_matter(note)
    async with client_factory(duplicate_check_ms=60_000) as client:
        again = await call(client, "notes_create", title=front["title"], content=body)
        other = await call(
            client, "notes_create", title="Invoices", content="Send the invoice on Friday, net 30."
        )
    assert again["provider"] == "dense" and again["recommendation"] == "review_first"
    assert (
        again["duplicates"][0]["title"] == "Thinking, Fast and Slow"
        and again["duplicates"][0]["similarity"] > 0.95
    )
    assert other["provider"] == "dense" and "recommendation" not in other
