"""Prompt files: `.json`, `.yaml`/`.yml`, `.toml`, and Markdown with YAML front matter.

A file holds one prompt object or a list of them (also under a top-level `prompts` key, as
TOML's `[[prompts]]` writes it). A prompt has name, author, details, system_prompt,
user_prompt and keywords; each non-empty field becomes one chunk named after it.

Markdown: front matter gives name, author and keywords; the body before the first `## `
heading is `details`; `## System prompt` and `## User prompt` sections (each up to the next
`## ` heading, fenced code excepted) are the prompts; other sections are kept in `details`.

A prompt may declare its `{{var}}` arguments' defaults and descriptions under `arguments` (also
`variables`, `inputs`, `args`: `placeholders.declared`); they are kept in the item's meta.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

from ..storage.items import ParsedItem
from ..text import dates
from ..text.fields import Section, assemble, summary_meta, text_of
from ..text.frontmatter import split_front_matter
from .placeholders import declared

FIELDS = ("name", "author", "details", "system_prompt", "user_prompt", "keywords")
# Where a prompt's summary comes from, first non-empty first: what it is for, else the prompt.
LEAD_FIELDS = ("details", "system_prompt", "user_prompt")
HEADINGS = {
    "name": "Name",
    "author": "Author",
    "details": "Details",
    "system_prompt": "System prompt",
    "user_prompt": "User prompt",
    "keywords": "Keywords",
}
ALIASES = {
    "title": "name",
    "description": "details",
    "tags": "keywords",
    "systemprompt": "system_prompt",
    "system": "system_prompt",
    "userprompt": "user_prompt",
    "user": "user_prompt",
    "content": "system_prompt",  # SillyTavern's system prompt presets: {name, content}
    "prompt": "user_prompt",  # awesome-chatgpt-prompts style: {act, prompt}
}
FORMATS = {
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".md": "markdown",
    ".markdown": "markdown",
}

_SECTION = re.compile(r"^##[ \t]+(.+?)[ \t#]*$")
_TITLE = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*(```|~~~)")


class PromptFileError(ValueError):
    """The file does not parse, or holds something that is not a prompt."""


def parse_prompt_file(path: Path, raw: bytes) -> list[ParsedItem]:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise PromptFileError(f"unsupported file type {path.suffix!r}; use one of {', '.join(FORMATS)}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PromptFileError(f"not UTF-8 text: {exc}") from None
    data = load(text, fmt)
    objects = prompt_objects(data)
    if isinstance(data, dict) and len(objects) == 1 and "prompts" not in data:
        return [prompt_item(path, objects[0], None, "", fmt)]
    # A list: each prompt keyed by its name (stable when the list is reordered), else its index.
    names = [text_of(o.get("name"), "name").strip().lower() for o in objects]
    unique = len(set(names)) == len(names) and all(names)
    return [
        prompt_item(path, obj, index, names[index] if unique else str(index), fmt)
        for index, obj in enumerate(objects)
    ]


def load(text: str, fmt: str) -> Any:
    try:
        if fmt == "json":
            return json.loads(text)
        if fmt == "toml":
            return tomllib.loads(text)
        if fmt == "markdown":
            return markdown_prompt(text)
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
        return docs[0] if len(docs) == 1 else docs
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        detail = " ".join(str(exc).split())
        raise PromptFileError(f"not valid {fmt.upper()}: {detail}") from None


def prompt_objects(data: Any) -> list[dict[str, Any]]:
    """The prompt objects of a parsed file: one object, a list, or a `prompts` list."""
    if isinstance(data, dict) and isinstance(data.get("prompts"), list) and "name" not in data:
        data = data["prompts"]
    if isinstance(data, dict):
        return [normalized(data)]
    if not isinstance(data, list):
        raise PromptFileError(f"expected a prompt object or a list of them, got {type(data).__name__}")
    for i, obj in enumerate(data):
        if not isinstance(obj, dict):
            raise PromptFileError(f"prompt {i + 1} of the list is not an object")
    return [normalized(o) for o in data]


def normalized(obj: dict[str, Any]) -> dict[str, Any]:
    """Keys lower-cased, `-`/space as `_`, and aliases (title, description, tags…) mapped."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        out.setdefault(field_key(str(key)), value)
    return out


def field_key(name: str) -> str:
    """`System prompt`, `system-prompt`, `systemPrompt` → system_prompt; aliases mapped."""
    key = re.sub(r"[\s-]+", "_", name.strip().lower())
    return key if key in FIELDS else ALIASES.get(key.replace("_", ""), key)


def prompt_item(path: Path, obj: dict[str, Any], index: int | None, key: str, fmt: str) -> ParsedItem:
    where = "the file" if index is None else f"prompt {index + 1} of the list"
    try:
        values = {f: text_of(obj.get(f), f).strip() for f in FIELDS if f != "keywords"}
    except ValueError as exc:
        raise PromptFileError(f"{where}: {exc}") from None
    keywords = keyword_list(obj.get("keywords"))
    if not values["name"]:
        if not (values["system_prompt"] or values["user_prompt"]):
            raise PromptFileError(f"{where} has no name (and no system_prompt or user_prompt)")
        values["name"] = path.stem if index is None else f"{path.stem} #{index + 1}"
    values["keywords"] = ", ".join(keywords)
    content, spans = assemble(Section(f, HEADINGS[f], values[f]) for f in FIELDS)
    mtime = dates.file_mtime(path)
    args = declared(obj)
    created = dates.parse_date(obj.get("created") or obj.get("created_at") or obj.get("date")) or mtime
    modified = dates.parse_date(obj.get("modified") or obj.get("updated") or obj.get("updated_at")) or mtime
    return ParsedItem(
        key=key,
        title=values["name"],
        content=content,
        created_at=created,
        last_modified=modified,
        tags=keywords,
        meta={
            "author": values["author"] or None,
            "format": fmt,
            "file_name": path.name,
            **summary_meta(content, spans, LEAD_FIELDS),
            **({"arguments": args} if args else {}),
        },
        chunks=spans,
    )


def keyword_list(value: Any) -> list[str]:
    """Keywords from a list, or from a comma-separated string (spaces stay inside a keyword)."""
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    words = (str(v).strip().lstrip("#").strip() for v in items if isinstance(v, str | int | float))
    return list(dict.fromkeys(w for w in words if w))


def markdown_prompt(text: str) -> dict[str, Any]:
    front, body = split_front_matter(text.replace("\r\n", "\n"))
    preamble, sections = split_sections(body)
    obj = normalized(front)
    title = _TITLE.search(preamble)
    if title and not obj.get("name"):  # no name in front matter: a `# Title` line names it
        obj["name"] = title.group(1)
        preamble = preamble[: title.start()] + preamble[title.end() :]
    details = [text_of(obj.get("details"), "details"), preamble]
    for heading, section in sections:
        key = field_key(heading)
        if key in ("system_prompt", "user_prompt"):
            obj[key] = section
        elif key == "details":
            details.append(section)
        elif section.strip():
            details.append(f"## {heading}\n{section.strip()}")
    obj["details"] = "\n\n".join(p.strip() for p in details if p.strip())
    return obj


def split_sections(body: str) -> tuple[str, list[tuple[str, str]]]:
    """The text before the first `## ` heading, and (heading, text) for each `## ` section."""
    preamble: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    fenced = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _SECTION.match(line)
        if heading:
            sections.append((heading.group(1), []))
        else:
            (sections[-1][1] if sections else preamble).append(line)
    return "\n".join(preamble), [(h, "\n".join(lines)) for h, lines in sections]
