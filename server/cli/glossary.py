"""`knowledge-mcp glossary add TERM SYNONYM… | remove TERM | list`: a user's search glossary.

The glossary is `<data_dir>/users/<user>/glossary.yaml` (`sources/search/glossary/file.py`),
plain YAML a person may also edit by hand; every search of that user expands with it.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.search.glossary.file import GLOSSARY_FILE, load_for_edit, parse_glossary, save
from knowledge_mcp.sources.storage.db import user_dir


def glossary_path(data_dir: Path, user: str) -> Path:
    return user_dir(data_dir, user) / GLOSSARY_FILE


def _load(path: Path) -> dict[str, list[str]]:
    try:
        return load_for_edit(path)
    except (yaml.YAMLError, ValueError, UnicodeDecodeError) as exc:
        raise KnowledgeError(
            f"{path}: not a glossary ({type(exc).__name__}); fix or remove it first"
        ) from None


def run_glossary(data_dir: Path, user: str, command: str, term: str | None, synonyms: list[str]) -> int:
    """Run one glossary verb for `user`; prints what it did (`list`: one term a line)."""
    path = glossary_path(data_dir, user)
    entries = _load(path)
    if command == "list":
        for name in sorted(entries, key=str.lower):
            print(f"{name}: {', '.join(entries[name])}")
        return 0
    assert term is not None
    same = next((name for name in entries if name.lower() == term.strip().lower()), None)
    if command == "remove":
        if same is None:
            raise KnowledgeError(f"glossary: no term {term!r} (see `knowledge-mcp glossary list`)")
        del entries[same]
        save(path, entries)
        print(f"removed {same}")
        return 0
    added = {name: list(values) for name, values in entries.items()}
    key = same or term.strip()
    added[key] = list(dict.fromkeys([*added.get(key, []), *(s.strip() for s in synonyms)]))
    checked = parse_glossary(yaml.safe_dump({key: added[key]}, allow_unicode=True))
    if not checked or checked.problem:
        raise KnowledgeError("glossary: a term and each synonym must be 1..8 words of letters or digits")
    save(path, added)
    print(f"{key}: {', '.join(added[key])}")
    return 0
