"""Safe forms of what comes from the file system, for the database and for the terminal.

A POSIX file name is bytes: one that is not valid UTF-8 reaches Python with surrogate escapes
(`\\udcff`), which SQLite cannot bind and a UTF-8 terminal cannot print. Such a path is stored
in a UTF-8 form that is the same on every run (so re-import and prune still match it), and
text a parser took from it (a title from the file name) has its lone surrogates replaced.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

from .items import ParsedItem

SURROGATE_RE = re.compile("[\ud800-\udfff]")
CONTROL_RE = re.compile("[\x00-\x1f\x7f]")


def stored_path(path: Path) -> Path:
    """`path` itself when its name is valid UTF-8; else the same bytes with each undecodable
    byte written `\\xNN` (stable from run to run)."""
    text = str(path)
    if not SURROGATE_RE.search(text):
        return path
    return Path(os.fsencode(text).decode("utf-8", "backslashreplace"))


def shown(path: Path | str) -> str:
    """A path as one printable line: undecodable bytes as `\\xNN`, control characters (a newline
    in a file name) escaped."""
    text = str(stored_path(Path(path))) if isinstance(path, Path) else path
    return CONTROL_RE.sub(lambda m: repr(m.group())[1:-1], SURROGATE_RE.sub("\ufffd", text))


def scrub(value: Any) -> Any:
    """`value` with lone surrogates in every string (in lists and dict keys and values too)
    replaced by U+FFFD, one character for one, so offsets into a text stay true."""
    if isinstance(value, str):
        return SURROGATE_RE.sub("\ufffd", value)
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    return value


ITEM_TEXTS = ("key", "origin", "title", "content", "created_at", "last_modified", "tags", "meta")
"""The fields of a `ParsedItem` that hold text (besides its chunks' field names and meta)."""


def scrub_item(item: ParsedItem) -> ParsedItem:
    """An item whose every text can be stored (a parser may carry surrogates from a file name
    or a lenient decode into a title, the body or the meta)."""
    chunks = item.chunks
    if chunks is not None:
        chunks = [dataclasses.replace(c, field=scrub(c.field), meta=scrub(c.meta)) for c in chunks]
    texts = {name: scrub(getattr(item, name)) for name in ITEM_TEXTS}
    return dataclasses.replace(item, **texts, chunks=chunks)


def needs_scrub(item: ParsedItem) -> bool:
    """Whether any text of the item holds a lone surrogate (one regex scan of each text: no
    copy of the item is made for the common case of none)."""
    chunks = [(c.field, c.meta) for c in item.chunks or ()]
    return _holds_surrogate([getattr(item, name) for name in ITEM_TEXTS] + chunks)


def storable(item: ParsedItem) -> ParsedItem:
    """The item as it can be stored (`scrub_item` when it holds a lone surrogate), its content
    hash kept when known. One strict UTF-8 encoding of the text the hash is taken of (which holds
    every text of the item but its key and origin) answers `needs_scrub` for the common item,
    which holds none, and is what the hash is taken of."""
    try:
        payload = item.hash_payload().encode()
    except (UnicodeEncodeError, TypeError, ValueError):  # a surrogate, or what the writer reports
        return scrub_item(item) if needs_scrub(item) else item
    if _holds_surrogate([item.key, item.origin]):
        return scrub_item(item)
    item.hashed(payload)
    return item


def _holds_surrogate(value: Any) -> bool:
    """`scrub`'s test: whether it would change `value` (one loop over the nested values rather
    than a generator per level: this runs for every imported item)."""
    pending = [value]
    while pending:
        value = pending.pop()
        if isinstance(value, str):  # an ASCII text (known to Python without a scan) holds none
            if not value.isascii() and SURROGATE_RE.search(value) is not None:
                return True
        elif isinstance(value, list | tuple):
            pending.extend(value)
        elif isinstance(value, dict):
            pending.extend(value)
            pending.extend(value.values())
    return False
