"""Text chunks of a PNG file (tEXt, zTXt, iTXt), read with struct and zlib. Pure: no I/O.

Character cards travel inside PNG avatars: the card JSON, base64-encoded, in a text chunk
with keyword `ccv3` (Character Card V3) or `chara` (V1/V2).
"""

from __future__ import annotations

import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_HEADER = struct.Struct(">I4s")
MAX_TEXT_BYTES = 50_000_000


class PngError(ValueError):
    """The file is not a PNG we can read."""


def text_chunks(raw: bytes) -> dict[str, str]:
    """Keyword → text of every text chunk (the first of each keyword wins)."""
    if not raw.startswith(SIGNATURE):
        raise PngError("not a PNG file (bad signature)")
    found: dict[str, str] = {}
    pos = len(SIGNATURE)
    while pos + _HEADER.size <= len(raw):
        length, kind = _HEADER.unpack_from(raw, pos)
        data_start = pos + _HEADER.size
        data_end = data_start + length
        if data_end + 4 > len(raw):
            raise PngError(f"truncated {kind.decode('latin-1', 'replace')} chunk at byte {pos}")
        pos = data_end + 4  # skip the CRC
        if kind in _READERS:
            keyword, text = _READERS[kind](raw[data_start:data_end])
            found.setdefault(keyword, text)
        elif kind == b"IEND":
            break
    return found


def _split_keyword(data: bytes) -> tuple[str, bytes]:
    keyword, sep, rest = data.partition(b"\0")
    if not sep:
        raise PngError("text chunk without a keyword separator")
    return keyword.decode("latin-1"), rest


def _inflate(data: bytes) -> bytes:
    try:
        d = zlib.decompressobj()
        out = d.decompress(data, MAX_TEXT_BYTES)
    except zlib.error as exc:
        raise PngError(f"compressed text chunk does not inflate: {exc}") from None
    if d.unconsumed_tail:
        raise PngError("compressed text chunk is too large")
    return out


def _text(data: bytes) -> tuple[str, str]:
    keyword, rest = _split_keyword(data)
    return keyword, rest.decode("latin-1")


def _ztext(data: bytes) -> tuple[str, str]:
    keyword, rest = _split_keyword(data)
    return keyword, _inflate(rest[1:]).decode("latin-1")


def _itext(data: bytes) -> tuple[str, str]:
    keyword, rest = _split_keyword(data)
    if len(rest) < 2:
        raise PngError(f"iTXt chunk {keyword!r} is truncated")
    compressed = rest[0] == 1
    _language, _, rest = rest[2:].partition(b"\0")
    _translated, _, text = rest.partition(b"\0")
    return keyword, (_inflate(text) if compressed else text).decode("utf-8", errors="replace")


_READERS = {b"tEXt": _text, b"zTXt": _ztext, b"iTXt": _itext}
