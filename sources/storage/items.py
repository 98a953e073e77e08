"""What a source's parser hands the import runner: items, each with its text and chunks.

A source reads one file into `ParsedItem`s; the runner (`importing`) stores them. The runner
knows a source only as an `ItemParser`, so it never imports the source classes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field as default
from pathlib import Path
from typing import Any, Protocol

from ..text.jsontext import json_encoder


class ItemParser(Protocol):
    """What the import runner needs of a source: its name, the file types it reads, its parser."""

    @property
    def name(self) -> str: ...

    @property
    def extensions(self) -> frozenset[str]: ...

    def parse_file(self, path: Path, raw: bytes) -> list[ParsedItem]: ...


@dataclass
class ChunkSpan:
    """An explicit chunk (a chat message, a prompt field) as a span of the item's content."""

    start: int
    end: int
    field: str | None = None
    meta: dict[str, Any] = default(default_factory=dict)


_HASH_JSON = json_encoder(sort_keys=True, default=str)
"""`json.dumps(..., sort_keys=True, ensure_ascii=False, default=str)` with one encoder for every
item (the same text: the hash of a stored item never changes), not a new one per call."""


@dataclass
class ParsedItem:
    key: str
    title: str
    content: str
    created_at: str
    last_modified: str
    tags: list[str] = default(default_factory=list)
    meta: dict[str, Any] = default(default_factory=dict)
    chunks: list[ChunkSpan] | None = None
    origin: str | None = None
    """The item's identity when it is not its file's (an email's `message-id:<id>`, whichever
    archive holds it); None: the file and `key` are its identity."""

    def origin_in(self, path: Path) -> str:
        """The identity the store keys this item by, when read from `path`."""
        return self.origin or (f"{path}#{self.key}" if self.key else str(path))

    _hash: str | None = default(default=None, init=False, repr=False, compare=False)
    """The content hash the import runner computed when it checked the item (`hashed`); None:
    computed at each call (a test may change an item between two writes)."""

    def hash_payload(self) -> str:
        """The text the content hash is taken of: every field a stored item is compared by."""
        return _HASH_JSON(
            [
                self.title,
                self.content,
                self.created_at,
                self.last_modified,
                self.tags,
                self.meta,
                [(c.start, c.end, c.field, c.meta) for c in self.chunks or []],
            ]
        )

    def content_hash(self) -> str:
        if self._hash is not None:
            return self._hash
        # surrogatepass: a parser's stray surrogate must not stop the import of its file (the
        # runner replaces it before the item is stored: `naming.scrub_item`)
        return hashlib.sha256(self.hash_payload().encode("utf-8", "surrogatepass")).hexdigest()

    def hashed(self, payload: bytes) -> None:
        """Keep the content hash of `payload`, this item's `hash_payload()` encoded: the import
        runner encodes it anyway (to learn whether the item holds a lone surrogate) and does not
        change the item after, so the writer need not encode it again."""
        self._hash = hashlib.sha256(payload).hexdigest()


@dataclass
class PartProblem:
    """One part of a file (a message of an `.mbox`, a chapter of an e-book) and what went wrong."""

    part: str
    reason: str


class ParsedFile(list[ParsedItem]):
    """A file's items, and the parts of it that could not be read (`failures`: each one is
    reported and makes the run's exit status 2, while the rest of the file imports) or were left
    out on purpose (`notices`, e.g. an over-sized chapter). A parser that has neither returns a
    plain list."""

    def __init__(
        self,
        items: Iterable[ParsedItem] = (),
        failures: Iterable[PartProblem] = (),
        notices: Iterable[PartProblem] = (),
    ) -> None:
        super().__init__(items)
        self.failures = list(failures)
        self.notices = list(notices)
