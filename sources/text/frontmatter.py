"""YAML front matter, as Obsidian, Jekyll and Hugo write it."""

from __future__ import annotations

import functools
import re
from typing import Any

import yaml

# libyaml's parser when PyYAML was built with it (its wheels are): the same safe loading, much
# faster than the pure-Python parser, which was most of a folder import's time (docs/performance.md).
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FRONT_MATTER = re.compile(
    r"\A\ufeff?---[ \t]*\r?\n(?:(.*?)\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL
)


_SIMPLE_LINE = re.compile(r"""([A-Za-z_][A-Za-z0-9_-]{0,63}): +(?:"([^"\\]*)"|([A-Za-z0-9][^:#"\t]*?)) *""")
"""A line of the plainest front matter: `key: "text without escapes"` or `key: plain words` (no
`:` or `#`, which could end the value or start a comment, and no leading indicator)."""
_NOT_PLAIN_TEXT = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
"""Characters YAML refuses or reads as a line break: their front matter is left to the parser."""


@functools.lru_cache(maxsize=256)
def _plain_key(key: str) -> bool:
    """`_plain_string` of a key (a few keys recur in every note)."""
    return _plain_string(key)


def _plain_string(value: str) -> bool:
    """Whether YAML reads the plain (unquoted, non-empty) scalar `value` as a string: none of the
    loader's implicit resolvers (numbers, dates, booleans, null…) matches it."""
    table = SAFE_LOADER.yaml_implicit_resolvers
    return not any(regexp.match(value) for _, regexp in table.get(value[0], []) + table.get(None, []))


def _simple_mapping(block: str) -> dict[str, Any] | None:
    """The mapping of a block of `_SIMPLE_LINE`s whose keys and plain values YAML reads as
    strings, as `yaml.load` gives it; None for anything else (left to the YAML parser). Most
    front matter is a few such lines, and the parser costs more than the rest of a note's import.
    """
    if not block or _NOT_PLAIN_TEXT.search(block):
        return None
    mapping: dict[str, Any] = {}
    for line in block.split("\n"):
        m = _SIMPLE_LINE.fullmatch(line)
        if m is None:
            return None
        key, quoted, plain = m.groups()
        if not _plain_key(key) or (plain is not None and not _plain_string(plain)):
            return None  # a number, a date, a boolean…
        mapping[key] = plain if quoted is None else quoted
    return mapping


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter mapping (empty when absent or not a mapping) and the body after it.

    Malformed YAML raises yaml.YAMLError: the importer reports the file rather than guessing.
    """
    m = _FRONT_MATTER.match(text)
    if not m:
        return {}, text.lstrip("\ufeff")
    block = m.group(1) or ""
    data = _simple_mapping(block)
    if data is None:
        data = yaml.load(block, Loader=SAFE_LOADER) or {}
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
