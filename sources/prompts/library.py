"""The user's prompt library as prompts a host can offer (MCP `prompts/list`, `prompts/get`).

Each imported prompt is one library prompt: a name a host can show in its prompt picker (the
prompt's own name as a slug, `code-reviewer`; a second prompt of the same slug gets its id's
start appended), its title, a description (the start of its details), and an argument for each
`{{var}}` placeholder of its system and user prompt (`placeholders.py`). Rendered, it is its
system prompt and then its user prompt, each a user message (MCP prompt messages have no
system role), with the arguments filled in; a prompt with neither renders its details.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..storage.store import Store
from .placeholders import Argument, arguments, placeholders, render, rendered_length, values_for

SPAN_FIELDS = ("details", "system_prompt", "user_prompt")

BODY_FIELDS = ("system_prompt", "user_prompt")
NAME_LIMIT = 64


@dataclass(frozen=True)
class LibraryPrompt:
    name: str
    title: str
    item_id: str
    description: str | None
    arguments: list[Argument]
    texts: dict[str, str] = field(default_factory=dict)
    """The prompt's details, system_prompt and user_prompt (those it has)."""

    @property
    def uri(self) -> str:
        return f"prompts://{self.item_id}"

    def bodies(self) -> list[str]:
        """The texts rendered into messages, in order."""
        return [self.texts[f] for f in BODY_FIELDS if self.texts.get(f)] or [self.texts.get("details", "")]

    def messages(self, given: Mapping[str, str]) -> list[str]:
        """The rendered texts, in order (each one user message)."""
        values = values_for(self.arguments, given)
        return [render(text, values) for text in self.bodies()]

    def rendered_length(self, given: Mapping[str, str]) -> int:
        """The characters `messages(given)` would have, without rendering them."""
        values = values_for(self.arguments, given)
        return sum(rendered_length(text, values) for text in self.bodies())


def slug(title: str) -> str:
    """A picker-safe name: lower-case ASCII letters and digits joined by `-` ('' when none)."""
    return re.sub(r"[^a-z0-9]+", "-", title.casefold()).strip("-")[:NAME_LIMIT].strip("-")


def unique_names(rows: list[tuple[str, str]]) -> list[str]:
    """A name for each (title, item_id), in order: its slug, else `prompt-<id>`; a name already
    taken gets the start of the item id appended."""
    taken: set[str] = set()
    names = []
    for title, item_id in rows:
        name = slug(title) or f"prompt-{item_id[:8]}"
        if name in taken:
            name = f"{name}-{item_id[:8]}"
        taken.add(name)
        names.append(name)
    return names


def library_prompt(
    name: str, title: str, item_id: str, meta: dict[str, object], texts: dict[str, str]
) -> LibraryPrompt:
    """One library prompt from an imported prompt's title, meta and field texts."""
    bodies = [texts[f] for f in BODY_FIELDS if texts.get(f)] or [texts.get("details", "")]
    declared = meta.get("arguments")
    specs = declared if isinstance(declared, dict) else {}
    summary = meta.get("summary") if meta.get("summary_field") == "details" else None
    return LibraryPrompt(
        name=name,
        title=title,
        item_id=item_id,
        description=str(summary) if summary else None,
        arguments=arguments(placeholders(bodies), specs),
        texts=texts,
    )


async def library(db: Store) -> list[LibraryPrompt]:
    """Every prompt of the library in `db`, in import order."""
    items = await db.items()
    spans: dict[int, dict[str, tuple[int, int]]] = {}
    for row in await db.field_spans(SPAN_FIELDS):
        spans.setdefault(int(row["item_rowid"]), {})[str(row["field"])] = (row["start"], row["end"])
    names = unique_names([(str(r["title"]), str(r["item_id"])) for r in items])
    out = []
    for name, row in zip(names, items, strict=True):
        content = str(row["content"])
        texts = {f: content[s:e] for f, (s, e) in spans.get(int(row["id"]), {}).items()}
        meta = json.loads(row["meta"] or "{}")
        out.append(library_prompt(name, str(row["title"]), str(row["item_id"]), meta, texts))
    return out


def find(prompts: list[LibraryPrompt], name: str) -> LibraryPrompt | None:
    """The prompt of this name (or item id, or uri)."""
    wanted = name.removeprefix("prompts://")
    return next((p for p in prompts if p.name == name or p.item_id == wanted), None)
