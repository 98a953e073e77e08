"""Character Card V1, V2 and V3 (SillyTavern, chub…) from `.json` files and `.png` avatars.

V1 is a flat object (name, description, personality, scenario, first_mes, mes_example); V2
(`spec = chara_card_v2`) and V3 (`chara_card_v3`) keep the card under `data` and add creator
notes, prompts, greetings, tags and a lorebook (`character_book`). A PNG carries the card as
base64 JSON in a `ccv3` text chunk (preferred) or a `chara` one.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..storage.items import ParsedItem
from ..text import dates
from ..text.fields import Section, assemble, summary_meta, text_of
from .png import SIGNATURE, text_chunks

CARD_KEYWORDS = ("ccv3", "chara")

# Single text fields, in reading order: (card key, heading).
TEXT_FIELDS = (
    ("description", "Description"),
    ("personality", "Personality"),
    ("scenario", "Scenario"),
    ("first_mes", "First message"),
    ("mes_example", "Example dialogue"),
)
PROMPT_FIELDS = (
    ("system_prompt", "System prompt"),
    ("post_history_instructions", "Post-history instructions"),
    ("creator_notes", "Creator notes"),
)
GREETING_FIELDS = (
    ("alternate_greetings", "Alternate greeting"),
    ("group_only_greetings", "Group-only greeting"),
)
# Where a card's summary comes from, first non-empty first: the text a person reads first.
LEAD_FIELDS = ("description", "personality", "scenario", "first_mes")
# Text that card editors put in an empty field: a template, not the card's content.
PLACEHOLDERS = frozenset({"creator's notes go here.", "creator's notes go here"})


class CardError(ValueError):
    """The file holds no readable character card."""


def parse_card_file(path: Path, raw: bytes) -> list[ParsedItem]:
    is_png = raw.startswith(SIGNATURE) or path.suffix.lower() == ".png"
    card = card_from_png(raw) if is_png else _json(raw, "the file")
    return [card_item(path, card)]


def card_from_png(raw: bytes) -> dict[str, Any]:
    """The card in a PNG's `ccv3` chunk, else its `chara` chunk; a broken ccv3 falls back to chara."""
    chunks = {k.lower(): v for k, v in text_chunks(raw).items()}
    present = [k for k in CARD_KEYWORDS if k in chunks]
    if not present:
        raise CardError("PNG has no character card (no 'ccv3' or 'chara' text chunk)")
    errors = []
    for keyword in present:
        try:
            return _json(_unbase64(chunks[keyword], keyword), f"the {keyword!r} chunk")
        except CardError as exc:
            errors.append(str(exc))
    raise CardError("; ".join(errors))


def _unbase64(text: str, keyword: str) -> bytes:
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise CardError(f"the {keyword!r} chunk is not valid base64") from None


def _json(raw: bytes, where: str) -> dict[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CardError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise CardError(f"{where} is not a JSON object")
    return data


def card_fields(card: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The spec (chara_card_v1/v2/v3) and the card's fields (V2/V3 `data`, else the flat V1 object)."""
    data = card.get("data")
    if isinstance(data, dict) and (str(card.get("spec", "")).startswith("chara_card_") or "name" in data):
        spec = str(card.get("spec") or "chara_card_v2")
        return spec, data
    fields = dict(card)
    if "creator_notes" not in fields and "creatorcomment" in fields:  # SillyTavern's V1 name
        fields["creator_notes"] = fields["creatorcomment"]
    return "chara_card_v1", fields


def card_item(path: Path, card: dict[str, Any]) -> ParsedItem:
    spec, fields = card_fields(card)
    name = text_of(fields.get("name"), "name").strip()
    if not name:
        raise CardError("character card has no name")
    tags = [t for t in (text_of(t, "tags").strip() for t in _list(fields.get("tags"))) if t]
    fields = {k: v for k, v in fields.items() if not is_placeholder(v)}
    content, spans = assemble(_sections(fields, tags))
    mtime = dates.file_mtime(path)
    meta = {
        "spec": spec,
        "creator": text_of(fields.get("creator"), "creator").strip() or None,
        "character_version": text_of(fields.get("character_version"), "character_version").strip() or None,
        "nickname": text_of(fields.get("nickname"), "nickname").strip() or None,
        "file_name": path.name,
        **summary_meta(content, spans, LEAD_FIELDS),
    }
    return ParsedItem(
        key="",
        title=name,
        content=content,
        created_at=dates.parse_date(fields.get("creation_date")) or mtime,
        last_modified=dates.parse_date(fields.get("modification_date")) or mtime,
        tags=list(dict.fromkeys(tags)),
        meta=meta,
        chunks=spans,
    )


def is_placeholder(value: Any) -> bool:
    """Whether a field holds only an editor's template text ("Creator's notes go here.")."""
    return isinstance(value, str) and " ".join(value.split()).lower() in PLACEHOLDERS


def _sections(fields: dict[str, Any], tags: list[str]) -> Iterator[Section]:
    for key, heading in TEXT_FIELDS:
        yield Section(key, heading, text_of(fields.get(key), key))
    for key, heading in GREETING_FIELDS:
        for i, greeting in enumerate(_list(fields.get(key))):
            yield Section(key, f"{heading} {i + 1}", text_of(greeting, key), {"index": i})
    for key, heading in PROMPT_FIELDS:
        yield Section(key, heading, text_of(fields.get(key), key))
    yield from _multilingual_notes(fields)
    yield from _lorebook(fields.get("character_book"))
    yield Section("nickname", "Nickname", text_of(fields.get("nickname"), "nickname"))
    yield Section("creator", "Creator", text_of(fields.get("creator"), "creator"))
    yield Section("tags", "Tags", ", ".join(tags))


def _multilingual_notes(fields: dict[str, Any]) -> Iterator[Section]:
    """V3 creator notes in other languages (those that differ from `creator_notes`)."""
    notes = fields.get("creator_notes_multilingual")
    if not isinstance(notes, dict):
        return
    main = text_of(fields.get("creator_notes"), "creator_notes").strip()
    for lang, text in notes.items():
        value = text_of(text, "creator_notes_multilingual")
        if value.strip() and value.strip() != main:
            yield Section("creator_notes_multilingual", f"Creator notes ({lang})", value, {"language": lang})


def _lorebook(book: Any) -> Iterator[Section]:
    """One section per lorebook entry: its keys and content."""
    if not isinstance(book, dict):
        return
    for i, entry in enumerate(_list(book.get("entries"))):
        if not isinstance(entry, dict):
            continue
        keys = [text_of(k, "keys") for k in _list(entry.get("keys")) + _list(entry.get("secondary_keys"))]
        label = text_of(entry.get("name") or entry.get("comment"), "name").strip() or f"entry {i + 1}"
        body = text_of(entry.get("content"), "content").strip()
        text = f"Keys: {', '.join(keys)}\n{body}" if keys and body else body
        yield Section("character_book", f"Lorebook: {label}", text, {"index": i, "entry": label})


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
