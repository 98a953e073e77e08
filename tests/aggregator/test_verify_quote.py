"""verify_quote through a real MCP client, on every source: a quote copied with its line breaks
collapsed and its quotes curled is found (with the normalisations it needed, the chunk, offsets
and loc); with one word changed it is not, and the closest passage is the original."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, call, error, import_into

pytestmark = pytest.mark.anyio

# (source, fixture, a word of the item to quote, what `at` cites it by)
CASES = [
    ("notes", FIXTURES / "notes", "levain", None),
    ("media", FIXTURES / "media" / "emails" / "team-thread.mbox", "catamaran", None),
    ("media", FIXTURES / "media" / "transcripts" / "talk-sqlite-internals.srt", "pages", "start_s"),
    ("chats", FIXTURES / "chats" / "plain", "heat pump", "sender"),
    ("characters", FIXTURES / "characters" / "captain-mirelle.json", "Mirelle", "field"),
    ("prompts", FIXTURES / "prompts" / "code-reviewer.json", "review", "field"),
]


def stored(data_dir: Path, source: str, item_id: str) -> tuple[str, list[str]]:
    """The item's text and its chunks' texts as stored (read straight from its database)."""
    with sqlite3.connect(data_dir / "users" / "local" / f"{source}.db") as conn:
        (rowid, text) = conn.execute(
            f"SELECT id, content FROM {source}_items WHERE item_id = ?", (item_id,)
        ).fetchone()
        bodies = conn.execute(
            f"SELECT body FROM {source}_chunks WHERE item_rowid = ? ORDER BY chunk_index", (rowid,)
        )
        return str(text), [str(b[0]) for b in bodies]


def passage(bodies: list[str]) -> str:
    """About 16 words of one chunk (a message, a field, a cue group), across a line break when
    one has a line break between words."""
    for body in bodies:
        breaks = [
            i for i, c in enumerate(body) if c == "\n" and " " in body[:i][-40:] and " " in body[i:][:40]
        ]
        if breaks:
            start = body.rfind(" ", 0, max(0, breaks[0] - 45)) + 1
            end = body.find(" ", breaks[0] + 45)
            return body[start : end if end > 0 else len(body)].strip()
    body = max(bodies, key=len)
    return " ".join(body.split()[:16])


def read_text(content: Any) -> str:
    """A get's content as plain words (a chat's is its messages)."""
    if isinstance(content, list):
        content = " ".join(str(m.get("text", "")) for m in content)
    return " ".join(str(content).split())


def curled(quote: str) -> str:
    """What a client does to a copied quote: line breaks collapsed, quotation marks curled."""
    flat = " ".join(quote.split())
    return flat.replace("'", "\u2019").replace('"', "\u201c")


def one_word_changed(quote: str) -> tuple[str, str]:
    words = quote.split()
    longest = max(range(len(words)), key=lambda i: len(words[i].strip(".,;:!?\"'")))
    original = words[longest]
    words[longest] = "zebra"
    return " ".join(words), original


async def first_hit(client: Any, source: str, query: str) -> str:
    page = await call(client, "knowledge_search", query=query, sources=[source], limit=1)
    assert page["results"], f"no {source} result for {query!r}"
    return str(page["results"][0]["uri"])


@pytest.mark.parametrize(
    ("source", "fixture", "query", "cited_by"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES]
)
async def test_a_copied_quote_is_found_and_one_changed_word_names_the_closest_passage(
    client_factory: Any, data_dir: Path, source: str, fixture: Path, query: str, cited_by: str | None
) -> None:
    await import_into(data_dir, source, fixture)
    async with client_factory() as client:
        uri = await first_hit(client, source, query)
        text, bodies = stored(data_dir, source, uri.split("://", 1)[1])
        original = passage(bodies)
        found = await call(client, "verify_quote", uri=uri, quote=curled(original))
        changed, replaced = one_word_changed(original)
        missing = await call(client, "verify_quote", uri=uri, quote=curled(changed))
        read = await call(
            client, "knowledge_get", uri=uri, loc=found["match"]["loc"], retrieval={"mode": "chunk"}
        )
    assert found["found"] is True
    expected = {"whitespace"} if "\n" in original else set()
    expected |= {"quotes"} if {"'", '"'} & set(original) else set()
    assert set(found.get("normalisations", [])) == expected, original
    match = found["match"]
    assert text[match["offsets"][0] : match["offsets"][1]] == match["text"]
    assert " ".join(match["text"].split()) == " ".join(original.split())
    assert match["chunk_id"] and match["loc"]
    assert " ".join(original.split()[-3:]) in read_text(read["content"])
    if cited_by is not None:
        assert cited_by in match["at"]
    assert missing["found"] is False
    assert replaced in missing["closest"]["text"]
    assert 0.8 < missing["similarity"] < 1.0


async def test_a_quote_found_without_normalising_says_none(client_factory: Any, data_dir: Path) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    async with client_factory() as client:
        uri = await first_hit(client, "notes", "levain")
        text, _ = stored(data_dir, "notes", uri.split("://", 1)[1])
        words = text.split()
        exact = text[text.find(words[3]) :][:40].rsplit(" ", 1)[0]
        verdict = await call(client, "verify_quote", uri=uri, quote=exact)
    assert verdict["found"] is True and "normalisations" not in verdict


async def test_verify_quote_errors_name_the_field(client_factory: Any, data_dir: Path) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    async with client_factory() as client:
        assert "uri" in await error(client, "verify_quote", uri="nowhere", quote="words")
        assert "note_id" in await error(client, "verify_quote", uri="notes://missing", quote="words")
        assert "quote" in await error(client, "verify_quote", uri="notes://x", quote=" \u2026 ")
        assert "quote" in await error(client, "verify_quote", uri="notes://x", quote="w" * 5001)
