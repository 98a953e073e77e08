"""Bytes of a text file to text: a byte-order mark first, then UTF-8, then a detected charset.

`decode_text(raw, declared=None)` is the one entry point for every text format (notes, media
`.txt`/`.md`/`.html`/`.srt`/`.vtt`, email bodies):

1. a BOM (UTF-8, UTF-16 or UTF-32, either byte order) decides the codec and is dropped;
2. bytes that look binary (a NUL byte, or many control characters, in the first 8 KB — a JPEG
   renamed `.txt`) raise `ImportFileError("binary content, not text")`: never indexed;
3. strict UTF-8;
4. the `declared` charset (an HTML `<meta charset>`, a MIME `charset=`), when Python knows it
   and it decodes the bytes without error;
5. charset-normalizer's best guess for legacy encodings (windows-1252, latin-1, Shift-JIS…),
   windows-1252 first among equally clean guesses;
6. else windows-1252 with replacement characters, so a file never fails for its encoding alone.

Line endings come back as `\\n` (CRLF and lone CR converted).
"""

from __future__ import annotations

import codecs
import logging
import re

from ..errors import ImportFileError

logging.getLogger("charset_normalizer").setLevel(logging.WARNING)  # its DEBUG quotes bytes

SNIFF_BYTES = 8192
MAX_CONTROL_RATIO = 0.05
TIE = 1e-9  # guesses as clean and as coherent as the best one
BINARY_MESSAGE = "binary content, not text"

# Longest first: the UTF-32-LE mark begins with the UTF-16-LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_CONTROL = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])
"""The control bytes counted against text (not tab, newline, form feed, carriage return, escape)."""
_NEWLINES = re.compile(r"\r\n?")


def bom_codec(raw: bytes) -> tuple[str, int] | None:
    """The codec a byte-order mark names and the mark's length, or None without a mark."""
    for mark, codec in _BOMS:
        if raw.startswith(mark):
            return codec, len(mark)
    return None


def looks_binary(raw: bytes) -> bool:
    """True when the start of `raw` holds a NUL byte or more than 5 % control bytes."""
    head = raw[:SNIFF_BYTES]
    if not head or b"\x00" in head:
        return bool(head)
    controls = len(head) - len(head.translate(None, _CONTROL))  # a C loop, not a regex's matches
    return controls > MAX_CONTROL_RATIO * len(head)


def known_codec(name: str | None) -> str | None:
    """Python's name for a declared charset, or None when it is unknown or absent."""
    if not name:
        return None
    try:
        return codecs.lookup(name.strip().strip("\"'")).name
    except LookupError:
        return None


def _decode_unmarked(raw: bytes, declared: str | None) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    codec = known_codec(declared)
    if codec and codec != "utf-8":
        try:
            return raw.decode(codec)
        except UnicodeDecodeError:
            pass
    return _detected(raw)


def _detected(raw: bytes) -> str:
    """charset-normalizer's guess; among equally clean and coherent guesses windows-1252 wins
    (short Western texts otherwise come back as windows-1250: "crème" as "crčme")."""
    from charset_normalizer import from_bytes  # loaded only for a file that is not UTF-8

    matches = list(from_bytes(raw))
    if not matches:
        return raw.decode("cp1252", errors="replace")
    best = matches[0]
    clean = [m for m in matches if m.chaos <= best.chaos + TIE and m.coherence >= best.coherence - TIE]
    if any("cp1252" in m.could_be_from_charset for m in clean):
        try:
            return raw.decode("cp1252")
        except UnicodeDecodeError:
            pass
    return str(best)


def decode_text(raw: bytes, declared: str | None = None) -> str:
    """The text of `raw` with `\\n` line endings; ImportFileError when the bytes are binary."""
    marked = bom_codec(raw)
    if marked:
        codec, skip = marked
        text = raw[skip:].decode(codec, errors="replace")
    elif looks_binary(raw):
        raise ImportFileError(BINARY_MESSAGE)
    else:
        text = _decode_unmarked(raw, declared)
    return _NEWLINES.sub("\n", text) if "\r" in text else text
