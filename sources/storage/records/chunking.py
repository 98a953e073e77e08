"""Split long content into ordered, overlapping chunks on paragraph and sentence boundaries.

Pure: no I/O. A chunk is a span of the item's text (character offsets), so neighbouring chunks
can be joined back without duplicating their overlap.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

DEFAULT_CHUNK_TOKENS = 500
DEFAULT_OVERLAP_TOKENS = 75  # about 15 %
DEFAULT_CHARS_PER_TOKEN = 4

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Chunk:
    index: int
    start: int
    end: int
    text: str

    def uuid(self, item_id: str) -> str:
        """Stable id from the item id and the chunk's content."""
        digest = hashlib.sha256(f"{item_id}\x00{self.text}".encode()).hexdigest()
        return digest[:24]


def _last_boundary(text: str, low: int, high: int) -> int | None:
    """Where the last paragraph break, else sentence end, else space in text[low:high] starts."""
    for pattern in (_PARAGRAPH, _SENTENCE, _SPACE):
        found = None
        for m in pattern.finditer(text, low, high):
            found = m.start()
        if found is not None:
            return found
    return None


def _first_boundary(text: str, low: int, high: int) -> int | None:
    """The first sentence start, else word start, in text[low:high]."""
    for pattern in (_SENTENCE, _SPACE):
        m = pattern.search(text, low, high)
        if m is not None:
            return m.end()
    return None


def chunk_text(
    text: str,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
    chars_per_token: int = DEFAULT_CHARS_PER_TOKEN,
) -> list[Chunk]:
    """Ordered chunks covering `text`; one chunk when it is short.

    Each chunk ends at the last paragraph break, sentence end or space that fits in `size`
    characters (past half of it), and the next starts at the first sentence (else word) start
    within the last `overlap` characters, so neighbours share about `overlap` characters and
    every chunk reaches further than the one before.
    """
    size = max(1, chunk_tokens * chars_per_token)
    overlap = max(0, min(overlap_tokens * chars_per_token, size // 2))
    if not text.strip():
        return []
    if len(text) <= size:
        return [Chunk(0, 0, len(text), text)]
    chunks: list[Chunk] = []
    start = 0
    while True:
        if len(text) - start <= size:
            end = len(text)
        else:
            cut = _last_boundary(text, start + size // 2, start + size)
            end = cut if cut is not None and cut > start else start + size
        chunks.append(Chunk(len(chunks), start, end, text[start:end]))
        if end >= len(text):
            return chunks
        nxt = _first_boundary(text, max(start + 1, end - overlap), end) if overlap else None
        start = nxt if nxt is not None and start < nxt < end else end
