"""A glossary file: YAML mapping each term (a word or a phrase) to its synonyms, best first.

    BP: [blood pressure, hypertension]
    myocardial infarction: heart attack

Each user has one in their data folder (`glossary.yaml`, edited by hand or with
`knowledge-mcp glossary`); a server may name a shared one (setting `glossary_file`), whose terms
a user's own entry replaces. Reading never raises: a file that is not YAML, not a mapping, too
large, or holds odd entries (empty, too long, not text) yields what it can and a plain sentence
saying what was left out. Terms and synonyms are only ever words to the search (every term is
quoted, `query.py`), so FTS5 operators or quotes in a glossary are harmless.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..query import words_of

GLOSSARY_FILE = "glossary.yaml"
MAX_FILE_BYTES = 1_000_000
MAX_ENTRIES = 10_000
MAX_WORDS = 8
"""A term or synonym of more words than this is left out (a glossary entry, not a passage)."""
MAX_CHARS = 200
MAX_SYNONYMS = 20
"""Synonyms kept per term when reading (expansion uses the first two)."""
CACHE_SIZE = 256

Key = tuple[str, ...]


@dataclass(frozen=True)
class Glossary:
    """Terms (as their lowercased words) → synonyms as written, best first; and what was left
    out of the file, in a sentence (None: nothing)."""

    entries: Mapping[Key, tuple[str, ...]] = field(default_factory=dict)
    problem: str | None = None

    def __bool__(self) -> bool:
        return bool(self.entries)


EMPTY = Glossary()


def parse_glossary(text: str, name: str = GLOSSARY_FILE) -> Glossary:
    """The glossary in YAML `text`; `name` is how a problem names the file. Pure."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        return Glossary(problem=f"{name} is not valid YAML{where}: no expansion from it")
    if data is None:
        return EMPTY
    if not isinstance(data, dict):
        return Glossary(problem=f"{name} is not a mapping of term: [synonyms]: no expansion from it")
    entries: dict[Key, tuple[str, ...]] = {}
    skipped = 0
    for term, synonyms in list(data.items())[:MAX_ENTRIES]:
        key, kept = _entry(term, synonyms)
        if key is None or not kept:
            skipped += 1
            continue
        entries[key] = kept
    skipped += max(0, len(data) - MAX_ENTRIES)
    problem = None
    if skipped:
        entries_word = "entry" if skipped == 1 else "entries"
        problem = f"{name}: {skipped} {entries_word} left out (empty, too long or not text)"
    return Glossary(entries, problem)


def _entry(term: Any, synonyms: Any) -> tuple[Key | None, tuple[str, ...]]:
    """One entry's key and its usable synonyms (those that are text of a few words, not the
    term itself, each once)."""
    key = _words(term)
    if key is None:
        return None, ()
    values = [synonyms] if isinstance(synonyms, str | int | float) else synonyms
    if not isinstance(values, list):
        return key, ()
    kept: dict[Key, str] = {}
    for value in values:
        words = _words(value)
        if words is not None and words != key and words not in kept:
            kept[words] = " ".join(str(value).split())
    return key, tuple(kept.values())[:MAX_SYNONYMS]


def _words(value: Any) -> Key | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = str(value)
    words = tuple(words_of(text))
    if not words or len(words) > MAX_WORDS or len(text) > MAX_CHARS:
        return None
    return words


_cache: dict[Path, tuple[tuple[int, int], Glossary]] = {}


def read_glossary(path: Path, name: str = GLOSSARY_FILE) -> Glossary:
    """The glossary at `path` (EMPTY when there is none), read again only when it changed."""
    try:
        stat = path.stat()
    except OSError:
        return EMPTY
    version = (stat.st_mtime_ns, stat.st_size)
    cached = _cache.get(path)
    if cached is not None and cached[0] == version:
        return cached[1]
    if stat.st_size > MAX_FILE_BYTES:
        glossary = Glossary(problem=f"{name} is over {MAX_FILE_BYTES // 1_000_000} MB: no expansion from it")
    else:
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            glossary = Glossary(problem=f"{name} could not be read: no expansion from it")
        else:
            glossary = parse_glossary(text, name)
    if len(_cache) >= CACHE_SIZE:
        _cache.clear()
    _cache[path] = (version, glossary)
    return glossary


def combined(server: Glossary, user: Glossary) -> Glossary:
    """The server's glossary with the user's entries over it."""
    if not server:
        return user if not server.problem else Glossary(user.entries, _both(server, user))
    return Glossary({**server.entries, **user.entries}, _both(server, user))


def _both(server: Glossary, user: Glossary) -> str | None:
    return "; ".join(p for p in (server.problem, user.problem) if p) or None


# -- editing (the CLI) -----------------------------------------------------------------------


def load_for_edit(path: Path) -> dict[str, list[str]]:
    """The file as a plain mapping to edit; a file that is not a valid glossary is an error
    naming it (editing would lose what it holds)."""
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a mapping of term: [synonyms]; fix or remove it first")
    return {str(k): [str(v) for v in (vs if isinstance(vs, list) else [vs])] for k, vs in data.items()}


def save(path: Path, entries: Mapping[str, list[str]]) -> None:
    """Write the glossary atomically (a temporary file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(dict(entries), allow_unicode=True, sort_keys=True, default_flow_style=None)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
