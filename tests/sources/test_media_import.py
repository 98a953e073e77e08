"""Importing media: every format's fields, idempotent re-import, prune and broken files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.media import source
from knowledge_mcp.sources.media.formats import packages
from knowledge_mcp.sources.storage.db import database_path, open_database
from tests.conftest import FIXTURES, import_into
from tests.sources.test_media_parsers import EPUB_CHAPTER, make_epub

pytestmark = pytest.mark.anyio

MEDIA = FIXTURES / "media"
BROKEN = FIXTURES / "broken" / "media"
THREAD_ROOT = "<20250603080211.4f2a@mail.example.org>"


async def rows(data_dir: Path, sql: str) -> list[dict[str, Any]]:
    db = await open_database(database_path(data_dir, "local", "media"), source.migrations)
    try:
        return [dict(r) for r in await db.fetchall(sql)]
    finally:
        await db.close()


async def emails(data_dir: Path) -> dict[str, dict[str, Any]]:
    """Imported emails by subject's first word or, for the thread, by sender's first name."""
    found: dict[str, dict[str, Any]] = {}
    for row in await rows(data_dir, "SELECT * FROM media_items"):
        row["meta"] = json.loads(row["meta"])
        key = row["meta"]["from"].split()[0] if row["title"].startswith("Re:") else row["title"].split()[0]
        found[key + ("2" if key in found else "")] = row
    return found


@pytest.mark.parametrize("folder, count", [("emails", 7), ("documents", 4), ("transcripts", 2)])
async def test_importing_a_folder_twice_changes_nothing_the_second_time(
    data_dir: Path, folder: str, count: int
) -> None:
    first = await import_into(data_dir, "media", MEDIA / folder)
    assert (first.added, first.files_failed) == (count, 0)
    before = await rows(data_dir, "SELECT item_id, version, content_hash FROM media_items ORDER BY id")
    second = await import_into(data_dir, "media", MEDIA / folder)
    assert (second.added, second.updated, second.unchanged) == (0, 0, count)
    assert (
        await rows(data_dir, "SELECT item_id, version, content_hash FROM media_items ORDER BY id") == before
    )


async def test_a_changed_file_updates_its_item_with_a_new_version(data_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "docs"
    shutil.copytree(MEDIA / "documents", copy)
    await import_into(data_dir, "media", copy)
    notes = copy / "meeting-notes.md"
    notes.write_text(notes.read_text() + "\nAddendum: the albatross sighting was confirmed.\n")
    summary = await import_into(data_dir, "media", copy)
    assert (summary.added, summary.updated, summary.unchanged) == (0, 1, 3)
    (row,) = await rows(data_dir, "SELECT version, content FROM media_items WHERE title LIKE 'Platform%'")
    assert row["version"] == 2 and "albatross" in row["content"]


async def test_prune_removes_the_items_of_a_deleted_file(data_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "emails"
    shutil.copytree(MEDIA / "emails", copy)
    await import_into(data_dir, "media", copy)
    (copy / "team-thread.mbox").unlink()
    summary = await import_into(data_dir, "media", copy, prune=True)
    assert summary.pruned == 5
    left = await rows(data_dir, "SELECT source_path FROM media_items")
    assert len(left) == 2 and all("team-thread" not in r["source_path"] for r in left)
    assert not await rows(data_dir, "SELECT * FROM media_chunks_fts WHERE media_chunks_fts MATCH 'catamaran'")


async def test_broken_files_are_reported_and_the_rest_import(data_dir: Path) -> None:
    summary = await import_into(data_dir, "media", BROKEN, MEDIA / "documents")
    reasons = {Path(f["path"]).name: f["reason"] for f in summary.failures}
    assert set(reasons) == {"truncated.pdf", "not-really.eml"}
    assert "truncated PDF" in reasons["truncated.pdf"]
    assert "not an email" in reasons["not-really.eml"]
    assert [Path(n["path"]).name for n in summary.notices] == ["empty.txt"]
    assert summary.added == 4 and summary.exit_code == 2


async def test_emails_carry_headers_thread_and_attachments(data_dir: Path) -> None:
    await import_into(data_dir, "media", MEDIA / "emails")
    found = await emails(data_dir)
    assert set(found) == {"Marcus", "Priya", "Priya2", "Tom", "Invoice", "Your", "July"}
    marcus = found["Marcus"]
    meta = marcus["meta"]
    assert meta["from"] == "Marcus Oyelaran <marcus@example.org>"
    assert meta["to"] == ["Dana Whitfield <dana@example.org>", "Priya Raman <priya@example.org>"]
    assert meta["cc"] == ["Tom Baxter <tom@example.org>"]
    assert (meta["subject"], marcus["title"]) == ("Re: Q3 offsite planning", "Re: Q3 offsite planning")
    assert meta["message_id"] == "<CAF7x9mQ2r1@mail.gmail.com>"
    assert meta["date"] == marcus["created_at"] == "2025-06-03T10:47:30+01:00"
    assert {found[k]["meta"]["thread_id"] for k in ("Marcus", "Priya", "Priya2", "Tom")} == {THREAD_ROOT}
    assert found["Invoice"]["meta"]["thread_id"] == "<inv-4471.1748746807@northwind-hosting.example>"
    assert found["Invoice"]["meta"]["to"] == ["dana@example.org"]
    assert found["Your"]["meta"]["attachments"] == [
        {"filename": "expenses-june.csv", "content_type": "text/csv", "size_bytes": 440}
    ]
    assert all(0 < len(r["meta"]["summary"]) <= 200 for r in found.values())


async def test_email_bodies_hold_only_the_authors_own_text(data_dir: Path) -> None:
    await import_into(data_dir, "media", MEDIA / "emails")
    found = await emails(data_dir)
    marcus = found["Marcus"]["content"]
    assert "catamaran" in marcus and marcus.endswith("avoid a 7am start on day one this time?")
    for gone in ("zeppelin", "Friedrichshafen", "wrote:", "Engineering Manager", "+44 20"):
        assert gone not in marcus
    receipt = found["Your"]["content"]
    assert "USD 86.40" in receipt and "quokka" not in receipt and "ZGF0" not in receipt
    newsletter = found["July"]["content"]
    assert "courgette fritters" in newsletter and "<p>" not in newsletter


async def test_html_page_has_title_url_headings_date_and_no_boilerplate(data_dir: Path) -> None:
    await import_into(data_dir, "media", MEDIA / "documents" / "pasta-history.html")
    (row,) = await rows(data_dir, "SELECT * FROM media_items")
    meta = json.loads(row["meta"])
    assert row["title"] == "A Short History of Pasta | The Slow Kitchen"
    assert meta["url"] == "https://slowkitchen.example/articles/short-history-of-pasta"
    assert meta["headings"][:2] == ["A Short History of Pasta", "Itriyya and the Arab mills of Sicily"]
    assert (meta["media_type"], meta["doc_type"]) == ("html", "html")
    assert row["created_at"] == "2024-11-08T09:00:00+01:00"
    assert meta["summary"].startswith("No, Marco Polo did not bring pasta back from China.")
    for hidden in ("tangerine", "pomegranate", "Merchandise", "gtag", "schema.org"):
        assert hidden not in row["content"]
    assert "itriyya" in row["content"]


async def test_pdf_keeps_its_page_on_every_chunk(data_dir: Path) -> None:
    await import_into(data_dir, "media", MEDIA / "documents" / "solar-panel-guide.pdf")
    (row,) = await rows(data_dir, "SELECT * FROM media_items")
    meta = json.loads(row["meta"])
    assert row["title"] == "A Homeowner's Guide to Rooftop Solar"
    assert (meta["media_type"], meta["pages"], row["created_at"]) == ("pdf", 4, "2025-04-14T09:30:00+00:00")
    chunks = await rows(data_dir, "SELECT body, meta FROM media_chunks ORDER BY chunk_index")
    pages = [json.loads(c["meta"])["page"] for c in chunks]
    assert pages == sorted(pages) and set(pages) == {1, 2, 3, 4}
    clipping = [json.loads(c["meta"])["page"] for c in chunks if "inverter clipping" in c["body"]]
    assert clipping == [3]


async def test_markdown_and_text_documents_get_titles_headings_and_summaries(data_dir: Path) -> None:
    await import_into(
        data_dir, "media", MEDIA / "documents" / "meeting-notes.md", MEDIA / "documents" / "readme-style.txt"
    )
    found = {r["title"]: r for r in await rows(data_dir, "SELECT * FROM media_items")}
    md, txt = found["Platform team weekly sync"], found["BACKUP-ROTATE 2.3"]
    md_meta, txt_meta = json.loads(md["meta"]), json.loads(txt["meta"])
    assert json.loads(md["tags"]) == ["meetings", "platform"]
    assert md["created_at"] == "2025-06-10T00:00:00+00:00" and "attendees:" not in md["content"]
    assert md_meta["headings"][1:3] == ["Status", "Discussion: flaky integration tests"]
    assert (md_meta["media_type"], md_meta["doc_type"]) == ("markdown", "md")
    assert txt_meta["headings"][:2] == ["BACKUP-ROTATE 2.3", "REQUIREMENTS"]
    assert (txt_meta["media_type"], txt_meta["doc_type"]) == ("txt", "txt")
    assert txt_meta["summary"].startswith("backup-rotate keeps a directory")
    assert all(0 < len(m["summary"]) <= 200 for m in (md_meta, txt_meta))


async def test_vtt_keeps_cues_and_speakers_but_indexes_only_spoken_text(data_dir: Path) -> None:
    await import_into(data_dir, "media", MEDIA / "transcripts" / "podcast-episode-12.vtt")
    (row,) = await rows(data_dir, "SELECT * FROM media_items")
    meta = json.loads(row["meta"])
    assert row["title"] == "Tidewater podcast, episode 12: The harbour master of Port Ellen"
    cues = meta["cues"]
    assert cues[0] == {"start_s": 4.0, "end_s": 11.5, "text": cues[0]["text"]}
    assert cues[3]["speaker"] == "Ewan" and cues[3]["text"].startswith("Honestly? Paperwork")
    for gone in ("cormorant", "-->", "<v", "::cue", "Kind:", "q1", "align:start", "00:00"):
        assert gone not in row["content"]
    chunks = [
        json.loads(c["meta"])
        for c in await rows(data_dir, "SELECT meta FROM media_chunks ORDER BY chunk_index")
    ]
    assert len(chunks) >= 2 and chunks[0]["start_s"] == 4.0 and chunks[-1]["end_s"] == cues[-1]["end_s"]
    assert chunks[1]["first_cue"] <= chunks[0]["last_cue"]  # consecutive chunks overlap by a cue or so


async def test_srt_cues_have_times_in_seconds(data_dir: Path) -> None:
    await import_into(data_dir, "media", MEDIA / "transcripts" / "talk-sqlite-internals.srt")
    (row,) = await rows(data_dir, "SELECT * FROM media_items")
    cues = json.loads(row["meta"])["cues"]
    assert cues[0] == {"start_s": 2.35, "end_s": 6.817, "text": cues[0]["text"]}
    assert (
        row["content"].split("\n")[0] == "Okay, I think the mic is on. Can people at the back hear me? Great."
    )
    assert all(c["end_s"] > c["start_s"] for c in cues)


async def test_an_epub_chapter_left_out_is_a_notice_of_an_added_book(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(packages, "MAX_CHAPTER_BYTES", 200)
    chapters = {"one.xhtml": EPUB_CHAPTER.format("Neap"), "big.xhtml": EPUB_CHAPTER.format("Flood " * 60)}
    make_epub(tmp_path / "tides.epub", ["one.xhtml", "big.xhtml"], chapters)
    summary = await import_into(data_dir, "media", tmp_path)
    assert (summary.added, summary.files_failed, summary.exit_code) == (1, 0, 0)
    assert [n["path"] for n in summary.notices] == [f"{tmp_path / 'tides.epub'} (OEBPS/big.xhtml)"]
    assert summary.notices[0]["reason"].startswith("chapter left out: too large")
    (row,) = await rows(data_dir, "SELECT content FROM media_items")
    assert "Flood" not in row["content"] and "Neap text." in row["content"]
