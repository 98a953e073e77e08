"""Research sessions through a real MCP client: a named session's timeline (searches, gets,
citations with verified quotes, notes), its Markdown and JSON export (also as resources), stale
citations after a re-import, and persistence across a restart and a migration."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from loguru import logger
from mcp import Client

from knowledge_mcp.server.context import DatabasePool
from knowledge_mcp.server.sessions import timeline
from knowledge_mcp.server.sessions.store import MIGRATIONS, SessionStore
from knowledge_mcp.sources.storage.db import open_database
from tests.conftest import FIXTURES, call, error, import_into
from tests.server.test_knowledge_e2e import stdio

pytestmark = pytest.mark.anyio

Make = Callable[..., Client]


def note_text(data_dir: Path, uri: str) -> str:
    with sqlite3.connect(data_dir / "users" / "local" / "notes.db") as conn:
        row = conn.execute("SELECT content FROM notes_items WHERE item_id = ?", (uri.split("://")[1],))
        return str(row.fetchone()[0])


def sentence_of(text: str) -> str:
    """About a sentence of `text`: the first 12 words of its longest line."""
    longest = max(text.splitlines(), key=len)
    return " ".join(longest.split()[:12])


async def a_research_session(client: Client, data_dir: Path) -> tuple[str, dict[str, Any]]:
    """session_start, two searches, a get, a verified and an unverified citation, a note."""
    started = await call(client, "session_start", name="Sourdough hydration")
    first = await call(client, "knowledge_search", query="levain starter")
    await call(client, "knowledge_search", query="sourdough bread")
    uri = first["results"][0]["uri"]
    await call(client, "knowledge_get", uri=uri)
    quote = sentence_of(note_text(data_dir, uri))
    verified = await call(client, "session_cite", uris=[uri], claim="The levain needs time.", quote=quote)
    words = quote.split()
    words[len(words) // 2] = "zebra"
    unverified = await call(client, "session_cite", uris=[uri], claim="Made up.", quote=" ".join(words))
    await call(client, "session_note", text="Next: compare rye levains.")
    return started["session_id"], {"uri": uri, "quote": quote, "verified": verified, "unverified": unverified}


async def test_a_named_session_exports_its_timeline_in_order_and_survives_a_restart(
    client_factory: Make, data_dir: Path
) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    async with client_factory() as client:
        session_id, made = await a_research_session(client, data_dir)
        exported = await call(client, "session_export")
        as_json = await call(client, "session_export", format="json")
        info = await call(client, "session_info")
    markdown = exported["content"]
    assert exported["session_id"] == session_id == info["session_id"]
    assert markdown.startswith("# Research: Sourdough hydration")
    order = [
        "“levain starter”",
        "“sourdough bread”",
        f"({made['uri']})",
        "The levain needs time.",
        "Made up.",
    ]
    order += ["**Note**: Next: compare rye levains."]
    positions = [markdown.find(marker) for marker in order]
    assert -1 not in positions and positions == sorted(positions), positions
    assert "verified" in markdown and "NOT found in the source" in markdown
    assert [e["kind"] for e in as_json["content"]["events"]] == [
        "search",
        "search",
        "get",
        "cite",
        "cite",
        "note",
    ]
    assert made["verified"]["citations"][0]["found"] is True
    assert made["unverified"]["citations"][1]["found"] is False
    assert any("not in this item" in w for w in made["unverified"]["warnings"])
    assert info["name"] == "Sourdough hydration" and len(info["citations"]) == 2

    async with client_factory() as restarted:  # a new server (new cache, new process session)
        listed = await call(restarted, "session_list")
        again = await call(restarted, "session_export", session_id=session_id)
        resource = await restarted.read_resource(f"knowledge://sessions/{session_id}/export.md")
    (row,) = [s for s in listed["sessions"] if s["session_id"] == session_id]
    assert row["name"] == "Sourdough hydration"
    assert (row["searches"], row["citations"], row["notes"], row["events"]) == (2, 2, 1, 6)
    assert again["content"] == markdown
    assert resource.contents[0].text == markdown  # type: ignore[union-attr]


@pytest.mark.slow
async def test_over_stdio_a_research_session_outlives_the_server_process(data_dir: Path) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    async with stdio(data_dir) as client:
        session_id, _ = await a_research_session(client, data_dir)
        markdown = (await call(client, "session_export"))["content"]
    async with stdio(data_dir) as client:  # a new process: a new transport session, same store
        listed = await call(client, "session_list")
        again = await call(client, "session_export", session_id=session_id)
        resumed = await call(client, "session_start", name="Sourdough hydration")
        current = await call(client, "session_info")
    assert [s["session_id"] for s in listed["sessions"]] == [session_id]
    assert again["content"] == markdown
    assert resumed["resumed"] is True and current["session_id"] == session_id
    assert len(current["citations"]) == 2


async def test_starting_a_known_name_resumes_it_and_the_connection_follows_it(client_factory: Make) -> None:
    async with client_factory() as client:
        first = await call(client, "session_start", name="  Heat   pumps ")
        other = await call(client, "session_start", name="Something else")
        await call(client, "session_note", text="in the other one")
        back = await call(client, "session_start", name="Heat pumps")
        await call(client, "session_note", text="back on heat pumps")
        heat = await call(client, "session_export", format="json")
        listed = await call(client, "session_list")
    assert first["resumed"] is False and back["resumed"] is True
    assert back["session_id"] == first["session_id"] != other["session_id"]
    assert [e["text"] for e in heat["content"]["events"]] == ["back on heat pumps"]
    assert [s["name"] for s in listed["sessions"]] == ["Heat pumps", "Something else"]


async def test_a_citation_goes_stale_when_a_reimport_changes_the_quoted_text(
    client_factory: Make, data_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    note = folder / "rye.md"
    note.write_text("# Rye\n\nRye flour ferments faster than wheat.\n\nKeep the dough cool.\n")
    await import_into(data_dir, "notes", folder)
    async with client_factory() as client:
        uri = (await call(client, "knowledge_search", query="rye"))["results"][0]["uri"]
        cited = await call(client, "session_cite", uris=[uri], quote="rye flour ferments faster")
        assert "stale" not in cited["citations"][0]
        note.write_text("# Rye\n\nRye flour ferments slowly in winter.\n\nKeep the dough cool.\n")
        await import_into(data_dir, "notes", folder)
        info = await call(client, "session_info")
        markdown = (await call(client, "session_export"))["content"]
    assert info["citations"][0]["stale"] is True
    assert "STALE" in markdown and "**stale**" in markdown


async def test_a_citation_of_an_item_that_does_not_exist_says_so(
    client_factory: Make, data_dir: Path
) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    async with client_factory() as client:
        cited = await call(client, "session_cite", uris=["notes://nope"], claim="x", quote="any words")
    assert cited["cited"] == ["notes://nope"]
    assert any("notes://nope: no such item" in w for w in cited["warnings"])


async def test_quotes_claims_and_notes_never_reach_the_log(client_factory: Make, data_dir: Path) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    lines: list[str] = []
    sink = logger.add(lines.append, level="DEBUG", format="{message}")
    try:
        async with client_factory() as client:
            uri = (await call(client, "knowledge_search", query="levain starter"))["results"][0]["uri"]
            quote = sentence_of(note_text(data_dir, uri))
            assert len(quote) > 30
            await call(client, "verify_quote", uri=uri, quote=quote)
            await call(client, "session_cite", uris=[uri], claim="wombat claim", quote=quote)
            await call(client, "session_note", text="wombat note")
    finally:
        logger.remove(sink)
    logged = "\n".join(lines)
    assert "arguments" in logged  # at DEBUG, with each text's length only
    for secret in (quote, quote[:30], "wombat claim", "wombat note", "levain"):
        assert secret not in logged


async def test_research_tool_errors_name_the_field(client_factory: Make) -> None:
    async with client_factory() as client:
        assert "name" in await error(client, "session_start", name="   ")
        assert "text" in await error(client, "session_note", text=" ")
        assert "format" in await error(client, "session_export", format="pdf")
        assert "quote" in await error(client, "session_cite", uris=["notes://a"], quote="  ")


async def test_the_timeline_is_bounded_and_keeps_citations_and_notes(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timeline, "EVENT_LIMIT", 5)
    pool = DatabasePool()
    try:
        session = await SessionStore(data_dir, pool).open("local", "busy")
        await session.cite(["notes://a"])
        await session.note("keep me")
        for n in range(6):
            await session.record_results(f"query {n}", [f"notes://{n}"])
        events = await timeline.events(await SessionStore(data_dir, pool).database("local"), "busy")
    finally:
        await pool.close()
    assert [e.kind for e in events] == ["cite", "note", "search", "search", "search"]
    assert [e.payload["query"] for e in events[2:]] == ["query 3", "query 4", "query 5"]


async def test_a_version_one_sessions_database_is_migrated_and_keeps_its_sessions(data_dir: Path) -> None:
    path = data_dir / "users" / "local" / "sessions.db"
    path.parent.mkdir(parents=True)
    old = await open_database(path, MIGRATIONS[:1])
    await old.write(
        "INSERT INTO sessions (session_id, seen, cited, expires_at) VALUES (?, ?, ?, ?)",
        ("old", json.dumps(["notes://1"]), json.dumps(["notes://2"]), "2999-01-01T00:00:00.000000+00:00"),
    )
    await old.close()
    pool = DatabasePool()
    try:
        store = SessionStore(data_dir, pool)
        session = await store.open("local", "old")
        await session.note("after the migration")
        events = await timeline.events(await store.database("local"), "old")
    finally:
        await pool.close()
    assert list(session.seen) == ["notes://1"] and list(session.cited) == ["notes://2"]
    assert [e.payload for e in events] == [{"text": "after the migration"}]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
