"""Importing character cards: V1/V2/V3 from JSON and PNG, fields as chunks, re-import, prune, broken files."""

from __future__ import annotations

import base64
import json
import shutil
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.characters import source
from knowledge_mcp.sources.characters.cards import CardError
from knowledge_mcp.sources.characters.png import PngError, text_chunks
from knowledge_mcp.sources.storage.db import database_path, open_database
from tests.conftest import FIXTURES, import_into

CARDS = FIXTURES / "characters"
BROKEN = FIXTURES / "broken" / "characters"


def parse(name: str) -> Any:
    path = CARDS / name
    (item,) = source.parse_file(path, path.read_bytes())
    return item


def fields_of(item: Any) -> dict[str, str]:
    """Field name → text of its (first) chunk."""
    out: dict[str, str] = {}
    for c in item.chunks:
        out.setdefault(c.field, item.content[c.start : c.end])
    return out


def png_with(*chunks: tuple[bytes, bytes]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    body = b"".join(chunk(k, d) for k, d in chunks)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + body + chunk(b"IEND", b"")


def test_v2_json_card_has_every_text_field_as_its_own_chunk() -> None:
    item = parse("captain-mirelle.json")
    assert item.title == "Captain Mirelle"
    assert item.tags == ["fantasy", "nautical", "adventure", "mystery", "female"]
    assert item.meta["spec"] == "chara_card_v2"
    assert item.meta["creator"] == "brinewriter" and item.meta["character_version"] == "1.3"
    fields = fields_of(item)
    assert fields["description"].startswith("{{char}} is the captain of the Gilded Heron")
    assert fields["personality"].startswith("dry-humoured, decisive")
    assert "Saltglass Isles" in fields["scenario"]
    assert "brass compass" in fields["alternate_greetings"]
    assert (
        fields["post_history_instructions"]
        == "Keep replies under 200 words. Describe the sea and weather concretely."
    )
    assert fields["system_prompt"].startswith("You are {{char}}, a ship's captain")
    assert "lorebook covers the crew" in fields["creator_notes"]
    assert fields["tags"] == "fantasy, nautical, adventure, mystery, female"


def test_lorebook_entries_are_chunks_with_their_keys() -> None:
    item = parse("captain-mirelle.json")
    book = [(c.meta, item.content[c.start : c.end]) for c in item.chunks if c.field == "character_book"]
    assert [m["entry"] for m, _ in book] == ["Bosun Teague", "Saltglass Isles"]
    assert book[0][1].startswith("Keys: Teague, bosun\nBosun Teague: fifties, bald")
    assert "Osric Pell" in book[1][1]


def test_content_reads_as_headed_sections_and_spans_cover_only_field_text() -> None:
    item = parse("captain-mirelle.json")
    assert item.content.startswith("## Description\n{{char}} is the captain")
    assert "\n\n## Lorebook: Bosun Teague\nKeys: Teague" in item.content
    for c in item.chunks:
        assert not item.content[c.start : c.end].startswith("## ")
    starts = [c.start for c in item.chunks]
    assert starts == sorted(starts)


def test_v1_flat_card_imports_with_its_five_fields() -> None:
    item = parse("old-librarian-v1.json")
    assert item.title == "Ambrose Whitlock"
    assert item.meta["spec"] == "chara_card_v1"
    assert [c.field for c in item.chunks] == [
        "description",
        "personality",
        "scenario",
        "first_mes",
        "mes_example",
    ]
    assert "Hollowmere Subscription Library" in fields_of(item)["description"]
    assert item.tags == []


def test_png_with_chara_chunk_reads_the_v2_card() -> None:
    item = parse("dr-kestrel.png")
    assert item.title == "Dr. Imogen Kestrel"
    assert item.meta["creator"] == "puffinwatch"
    assert "slice of life" in item.tags
    assert "guillemots are fledging" in fields_of(item)["first_mes"]
    assert "ornithology" in fields_of(item)["creator_notes"]


def test_png_prefers_the_ccv3_chunk_over_the_chara_fallback() -> None:
    item = parse("nova-v3.png")
    assert item.title == "Nova"
    assert item.meta["spec"] == "chara_card_v3"
    assert item.meta["nickname"] == "Nov" and item.meta["character_version"] == "2.1"
    assert "heliotrope" in item.content and "periwinkle" not in item.content
    # V3 dates are the card's own (epoch seconds)
    assert item.created_at == "2025-03-30T16:00:00+00:00"
    assert item.last_modified == "2025-06-03T00:00:00+00:00"
    notes = [item.content[c.start : c.end] for c in item.chunks if c.field == "creator_notes_multilingual"]
    assert notes == ["Ruhige, figurengetriebene Science-Fiction. Nova behauptet nie, ein Mensch zu sein."]


def test_png_card_in_compressed_itxt_and_ztxt_chunks_is_read(tmp_path: Path) -> None:
    card = json.dumps({"name": "Wren", "description": "A lamplighter of Quillhaven."}).encode()
    encoded = base64.b64encode(card)
    itxt = b"ccv3\x00\x01\x00en\x00\x00" + zlib.compress(encoded)
    assert text_chunks(png_with((b"iTXt", itxt)))["ccv3"] == encoded.decode()
    path = tmp_path / "wren.png"
    path.write_bytes(png_with((b"zTXt", b"chara\x00\x00" + zlib.compress(encoded))))
    (item,) = source.parse_file(path, path.read_bytes())
    assert item.title == "Wren" and "Quillhaven" in item.content


def test_broken_ccv3_falls_back_to_a_good_chara_chunk(tmp_path: Path) -> None:
    good = base64.b64encode(json.dumps({"name": "Wren", "description": "lamplighter"}).encode())
    path = tmp_path / "wren.png"
    path.write_bytes(png_with((b"tEXt", b"ccv3\x00%%%"), (b"tEXt", b"chara\x00" + good)))
    (item,) = source.parse_file(path, path.read_bytes())
    assert item.title == "Wren" and item.meta["spec"] == "chara_card_v1"


@pytest.mark.parametrize(
    "name, message",
    [("no-card.png", "no character card"), ("bad-base64.png", "not valid base64")],
)
def test_broken_png_raises_a_clear_error(name: str, message: str) -> None:
    path = BROKEN / name
    with pytest.raises(CardError, match=message):
        source.parse_file(path, path.read_bytes())


@pytest.mark.parametrize(
    "raw, error, message",
    [
        (b"GIF89a", PngError, "not a PNG"),
        (png_with((b"tEXt", b"chara\x00" + base64.b64encode(b"{not json"))), CardError, "not valid JSON"),
        (png_with((b"tEXt", b"chara\x00" + base64.b64encode(b'{"description": "x"}'))), CardError, "no name"),
        (png_with((b"tEXt", b"chara\x00" + base64.b64encode(b"[1, 2]"))), CardError, "not a JSON object"),
    ],
)
def test_bad_png_cards_raise(raw: bytes, error: type[Exception], message: str, tmp_path: Path) -> None:
    path = tmp_path / "card.png"
    with pytest.raises(error, match=message):
        source.parse_file(path, raw)


def test_json_card_without_name_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "card.json"
    raw = json.dumps({"spec": "chara_card_v2", "data": {"description": "nameless"}}).encode()
    with pytest.raises(CardError, match="no name"):
        source.parse_file(path, raw)


@pytest.mark.anyio
async def test_reimport_of_the_fixture_folder_changes_nothing(data_dir: Path) -> None:
    first = await import_into(data_dir, "characters", CARDS)
    assert (first.added, first.files_failed) == (4, 0)
    second = await import_into(data_dir, "characters", CARDS)
    assert (second.added, second.updated, second.unchanged) == (0, 0, 4)


@pytest.mark.anyio
async def test_broken_files_are_reported_and_the_rest_import(data_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    shutil.copytree(CARDS, folder)
    shutil.copytree(BROKEN, folder / "broken")
    summary = await import_into(data_dir, "characters", folder)
    assert summary.added == 4 and summary.files_failed == 2
    reasons = {Path(f["path"]).name: f["reason"] for f in summary.failures}
    assert "no character card" in reasons["no-card.png"]
    assert "base64" in reasons["bad-base64.png"]
    assert summary.exit_code == 2


@pytest.mark.anyio
async def test_prune_removes_the_cards_of_a_deleted_file(data_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cards"
    shutil.copytree(CARDS, folder)
    await import_into(data_dir, "characters", folder)
    (folder / "dr-kestrel.png").unlink()
    summary = await import_into(data_dir, "characters", folder, prune=True)
    assert summary.pruned == 1
    db = await open_database(database_path(data_dir, "local", "characters"), source.migrations)
    try:
        titles = {r["title"] for r in await db.fetchall("SELECT title FROM characters_items")}
    finally:
        await db.close()
    assert titles == {"Captain Mirelle", "Ambrose Whitlock", "Nova"}


@pytest.mark.anyio
async def test_an_edited_card_is_updated_with_a_new_version(data_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "captain-mirelle.json"
    shutil.copy(CARDS / "captain-mirelle.json", path)
    await import_into(data_dir, "characters", path)
    card = json.loads(path.read_text())
    card["data"]["personality"] += ", secretly afraid of albatrosses"
    path.write_text(json.dumps(card))
    summary = await import_into(data_dir, "characters", path)
    assert summary.updated == 1
    db = await open_database(database_path(data_dir, "local", "characters"), source.migrations)
    try:
        row = await db.fetchone("SELECT version, content FROM characters_items")
    finally:
        await db.close()
    assert row is not None and row["version"] == 2 and "albatrosses" in row["content"]


def test_a_png_card_is_recognised_by_its_signature_whatever_the_extension(tmp_path: Path) -> None:
    path = tmp_path / "card.json"
    shutil.copy(CARDS / "dr-kestrel.png", path)
    (item,) = source.parse_file(path, path.read_bytes())
    assert item.title == "Dr. Imogen Kestrel"
