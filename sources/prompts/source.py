"""Prompts: prompt files (JSON, YAML, TOML, Markdown) searchable field by field."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiosqlite
from pydantic import Field

from ..errors import InvalidArgumentError, NotFoundError
from ..models import GetResponse, Loc, Retrieval
from ..retrieval import Defaults
from ..source import ChunkedSource, Databases, SearchOptions, SearchScope
from ..storage.items import ParsedItem
from ..storage.store import Store
from ..storage.store.filters import FieldIn, Filter
from ..text.fields import field_anchor, field_loc, summary_loc
from .migrations import MIGRATIONS
from .models import PromptField, PromptResult
from .parsing import FIELDS, FORMATS, parse_prompt_file


def field_filter(fields: Sequence[str]) -> Filter:
    """Only chunks of these fields may match."""
    if not fields:
        raise InvalidArgumentError("fields", f"name at least one of {', '.join(FIELDS)}, or leave it out")
    unknown = [f for f in fields if f not in FIELDS]
    if unknown:
        raise InvalidArgumentError("fields", f"unknown {unknown[0]!r}; allowed: {', '.join(FIELDS)}")
    chosen = tuple(dict.fromkeys(fields))
    return FieldIn(chosen)


class PromptsOptions(SearchOptions):
    fields: list[PromptField] | None = Field(
        default=None, description="Match only in these fields (default: all, the name weighted highest)."
    )


class PromptsSource(ChunkedSource[PromptResult]):
    name = "prompts"
    id_field = "prompt_id_or_name"
    result_model = PromptResult
    migrations = MIGRATIONS
    extensions = frozenset(FORMATS)
    options_model = PromptsOptions
    default_mode = "full"  # a get without a mode reads the whole prompt, within max_tokens

    async def search_scope(self, options: PromptsOptions | None, databases: Databases | None) -> SearchScope:
        """A search in every field, or with `fields` in those only.

        With `fields`, the match is in chunk bodies only: every chunk's title column holds the
        prompt's name, so an unrestricted match would let the name match any field's chunk. The
        `name` field has a chunk of its own, which a body match finds.
        """
        if options is not None and options.fields is not None:
            return [field_filter(options.fields)], ("body",)
        return [], None

    def parse_file(self, path: Path, raw: bytes) -> list[ParsedItem]:
        return parse_prompt_file(path, raw)

    def fields(self, item: aiosqlite.Row, chunk: aiosqlite.Row | None) -> dict[str, Any]:
        meta = json.loads(item["meta"])
        return {
            "author": meta.get("author"),
            "keywords": json.loads(item["tags"]),
            "summary": meta.get("summary"),
        }

    def result(self, item: aiosqlite.Row, chunk: aiosqlite.Row | None, **hit: Any) -> PromptResult:
        result = super().result(item, chunk, **hit)
        result._summary_loc = summary_loc(json.loads(item["meta"]))
        return result

    def loc(self, item: aiosqlite.Row, chunk: aiosqlite.Row) -> Loc:
        return field_loc(chunk)

    def anchor_from_loc(self, loc: Loc, chunks: list[aiosqlite.Row]) -> int | None:
        anchor = field_anchor(loc, chunks)
        return anchor if anchor is not None else super().anchor_from_loc(loc, chunks)

    async def resolve(self, db: Store, prompt_id_or_name: str) -> str:
        """The item id of a prompt given its id or its exact name (case-insensitive)."""
        value = prompt_id_or_name.strip()
        row = await db.item(value) or await db.item_by_title(value)
        if row is not None:
            return str(row["item_id"])
        folded = value.casefold()  # SQLite's lower() folds ASCII only
        for r in await db.titles():
            if str(r["title"]).casefold() == folded:
                return str(r["item_id"])
        raise NotFoundError(
            "prompt_id_or_name",
            prompt_id_or_name,
            "no prompt has that id or name; use an id or name from prompts_search results",
        )

    async def get(
        self,
        db: Store,
        item_id: str,
        *,
        loc: Loc | None = None,
        query: str | None = None,
        retrieval: Retrieval | None = None,
        defaults: Defaults,
        databases: Databases | None = None,
    ) -> GetResponse[PromptResult]:
        resolved = await self.resolve(db, item_id)
        return await super().get(
            db, resolved, loc=loc, query=query, retrieval=retrieval, defaults=defaults, databases=databases
        )


source = PromptsSource()
