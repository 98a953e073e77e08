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


def _split(text: str, start: int, end: int, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = start
    for m in pattern.finditer(text, start, end):
        if m.start() > pos:
            spans.append((pos, m.start()))
        pos = m.end()
    if pos < end:
        spans.append((pos, end))
    return spans


def _hard_split(text: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    while end - start > size:
        cut = text.rfind(" ", start + size // 2, start + size)
        cut = cut if cut > start else start + size
        spans.append((start, cut))
        start = cut
    spans.append((start, end))
    return spans


def _units(text: str, size: int) -> list[tuple[int, int]]:
    """Spans no longer than `size`: paragraphs, else sentences, else word-boundary cuts."""
    units: list[tuple[int, int]] = []
    for p_start, p_end in _split(text, 0, len(text), _PARAGRAPH):
        if p_end - p_start <= size:
            units.append((p_start, p_end))
            continue
        for s_start, s_end in _split(text, p_start, p_end, _SENTENCE):
            units.extend(_hard_split(text, s_start, s_end, size))
    return units


def chunk_text(
    text: str,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
    chars_per_token: int = DEFAULT_CHARS_PER_TOKEN,
) -> list[Chunk]:
    """Ordered chunks covering `text`; one chunk when it is short."""
    size = max(1, chunk_tokens * chars_per_token)
    overlap = max(0, min(overlap_tokens * chars_per_token, size // 2))
    if len(text) <= size:
        return [Chunk(0, 0, len(text), text)] if text.strip() else []
    units = _units(text, size)
    chunks: list[Chunk] = []
    first = 0
    while first < len(units):
        last = first
        while last + 1 < len(units) and units[last + 1][1] - units[first][0] <= size:
            last += 1
        start, end = units[first][0], units[last][1]
        chunks.append(Chunk(len(chunks), start, end, text[start:end]))
        if last + 1 >= len(units):
            break
        # Step back over trailing units while they fit in the overlap, but always advance.
        nxt = last + 1
        while nxt - 1 > first and end - units[nxt - 1][0] <= overlap:
            nxt -= 1
        first = nxt
    return chunks
