"""Characters: Character Card V1/V2/V3 from `.json` files and `.png` avatars."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiosqlite

from ..models import Loc
from ..source import ChunkedSource
from ..storage.items import ParsedItem
from ..text.fields import field_anchor, field_loc, summary_loc
from .cards import parse_card_file
from .migrations import MIGRATIONS
from .models import CharacterResult

_META_FIELDS = ("creator", "character_version", "nickname", "spec", "summary")


class CharactersSource(ChunkedSource[CharacterResult]):
    name = "characters"
    id_field = "character_id"
    result_model = CharacterResult
    migrations = MIGRATIONS
    extensions = frozenset({".json", ".png"})
    default_mode = "full"  # a get without a mode reads the whole card, within max_tokens

    def parse_file(self, path: Path, raw: bytes) -> list[ParsedItem]:
        return parse_card_file(path, raw)

    def fields(self, item: aiosqlite.Row, chunk: aiosqlite.Row | None) -> dict[str, Any]:
        meta = json.loads(item["meta"])
        return {k: meta.get(k) for k in _META_FIELDS}

    def result(self, item: aiosqlite.Row, chunk: aiosqlite.Row | None, **hit: Any) -> CharacterResult:
        result = super().result(item, chunk, **hit)
        result._summary_loc = summary_loc(json.loads(item["meta"]))
        return result

    def loc(self, item: aiosqlite.Row, chunk: aiosqlite.Row) -> Loc:
        return field_loc(chunk)

    def anchor_from_loc(self, loc: Loc, chunks: list[aiosqlite.Row]) -> int | None:
        anchor = field_anchor(loc, chunks)
        return anchor if anchor is not None else super().anchor_from_loc(loc, chunks)


source = CharactersSource()
