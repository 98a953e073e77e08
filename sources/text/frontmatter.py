"""YAML front matter, as Obsidian, Jekyll and Hugo write it."""

from __future__ import annotations

import re
from typing import Any

import yaml

# libyaml's parser when PyYAML was built with it (its wheels are): the same safe loading, much
# faster than the pure-Python parser, which was most of a folder import's time (docs/performance.md).
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FRONT_MATTER = re.compile(
    r"\A\ufeff?---[ \t]*\r?\n(?:(.*?)\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL
)


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter mapping (empty when absent or not a mapping) and the body after it.

    Malformed YAML raises yaml.YAMLError: the importer reports the file rather than guessing.
    """
    m = _FRONT_MATTER.match(text)
    if not m:
        return {}, text.lstrip("\ufeff")
    data = yaml.load(m.group(1) or "", Loader=SAFE_LOADER) or {}
    return (data if isinstance(data, dict) else {}), text[m.end() :]


def string_list(value: Any) -> list[str]:
    """Tags or keywords from a YAML list or a comma/space separated string, without '#'."""
    if value is None:
        return []
    items = value if isinstance(value, list) else re.split(r"[,\s]+", str(value))
    seen: dict[str, None] = {}
    for item in items:
        tag = str(item).strip().lstrip("#").strip()
        if tag:
            seen.setdefault(tag, None)
    return list(seen)
