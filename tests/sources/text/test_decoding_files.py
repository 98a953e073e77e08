"""Real files in legacy encodings and with byte-order marks import as the text they hold."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest

from knowledge_mcp.sources.media import source as media
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.text.decoding import decode_text
from tests.conftest import import_into

ENCODINGS = Path(__file__).parents[1] / "data" / "encodings"
SRT = ENCODINGS / "english-utf8-bom.srt"


@pytest.mark.parametrize(
    "legacy, utf8, words",
    [
        ("french-cp1252.txt", "french-utf8.txt", "écrivains"),
        ("russian-legacy.txt", "russian-utf8.txt", "учёбы"),
        ("turkish-cp1254.txt", None, "İstanbul, Türkiye'nin"),
        ("greek-legacy.txt", None, "Τουρκία"),
        ("chinese-big5.txt", None, "維基大典"),
    ],
)
def test_legacy_encoded_files_decode_to_their_text(legacy: str, utf8: str | None, words: str) -> None:
    text = decode_text((ENCODINGS / legacy).read_bytes())
    assert words in text and "\ufffd" not in text
    if utf8:
        assert text == decode_text((ENCODINGS / utf8).read_bytes())


@pytest.mark.parametrize("codec", ["utf-8-sig", "utf-16", "utf-16-be", "utf-32", "utf-32-be"])
def test_a_subtitle_with_any_unicode_bom_decodes_to_the_same_text(codec: str) -> None:
    text = decode_text(SRT.read_bytes())
    marked = {"utf-16-be": codecs.BOM_UTF16_BE, "utf-32-be": codecs.BOM_UTF32_BE}.get(codec, b"")
    assert decode_text(marked + text.encode(codec)) == text
    assert text.startswith("1\n00:00:06,500 --> 00:00:09,000")


@pytest.mark.anyio
@pytest.mark.parametrize("codec", ["utf-16", "utf-32"])
async def test_a_utf16_or_utf32_subtitle_imports_its_cues(data_dir: Path, tmp_path: Path, codec: str) -> None:
    text = decode_text(SRT.read_bytes())
    (tmp_path / f"talk-{codec}.srt").write_bytes(text.encode(codec))
    summary = await import_into(data_dir, "media", tmp_path)
    assert (summary.added, summary.files_failed) == (1, 0)
    db = await open_database(database_path(data_dir, "local", "media"), media.migrations)
    try:
        (row,) = await db.fetchall("SELECT content, meta FROM media_items")
    finally:
        await db.close()
    assert row["content"].startswith("About 2 months ago I found myself on")
    assert json.loads(row["meta"])["cues"][0]["start_s"] == 6.5


@pytest.mark.anyio
@pytest.mark.parametrize("source_name, name", [("media", "holiday.txt"), ("notes", "holiday.md")])
async def test_a_jpeg_renamed_as_text_fails_and_is_not_indexed(
    data_dir: Path, tmp_path: Path, source_name: str, name: str
) -> None:
    (tmp_path / name).write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00H\x00H\x00\x00" * 40)
    (tmp_path / "fine.txt").write_bytes("Grüße aus München.".encode("latin-1"))
    summary = await import_into(data_dir, source_name, tmp_path)
    assert summary.files_failed == 1 and summary.added == 1
    assert "binary content, not text" in summary.failures[0]["reason"]
