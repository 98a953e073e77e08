"""Text decoding: byte-order marks, UTF-8, legacy charsets and binary content."""

from __future__ import annotations

import codecs

import pytest

from knowledge_mcp.sources.errors import ImportFileError
from knowledge_mcp.sources.text.decoding import bom_codec, decode_text, known_codec, looks_binary

FRENCH = "Café crème, naïve façade — “quoted”.\nLine two"


@pytest.mark.parametrize(
    "raw, text",
    [
        (codecs.BOM_UTF8 + "naïve".encode(), "naïve"),
        ("1\n00:00:01,000 --> 00:00:02,000\nHé".encode("utf-16"), "1\n00:00:01,000 --> 00:00:02,000\nHé"),
        (codecs.BOM_UTF16_BE + "Grüße".encode("utf-16-be"), "Grüße"),
        ("WEBVTT\n\nÜber".encode("utf-32"), "WEBVTT\n\nÜber"),
        (codecs.BOM_UTF32_BE + "ok".encode("utf-32-be"), "ok"),
        (b"plain ascii\r\nand CRLF\rand CR", "plain ascii\nand CRLF\nand CR"),
    ],
)
def test_decode_text_reads_boms_and_line_endings(raw: bytes, text: str) -> None:
    assert decode_text(raw) == text


@pytest.mark.parametrize(
    "text, codec",
    [
        ("Zürich – 日本語", "utf-8"),
        (FRENCH, "cp1252"),
        ("Grüße aus München, schöne Straße.", "latin-1"),
        ("Zażółć gęślą jaźń, to jest polski tekst.", "cp1250"),
        ("Привет, это русский текст в кодировке.", "cp1251"),
        ("日本語のテキストです。これはテストです。", "shift_jis"),
    ],
)
def test_decode_text_reads_utf8_and_legacy_charsets(text: str, codec: str) -> None:
    assert decode_text(text.encode(codec)) == text


def test_a_declared_charset_is_used_when_the_bytes_are_not_utf8() -> None:
    assert decode_text("ÄÖÜ äöü ß".encode("iso-8859-15"), declared="ISO-8859-15") == "ÄÖÜ äöü ß"


def test_an_unknown_declared_charset_falls_back_to_detection() -> None:
    assert decode_text(FRENCH.encode("cp1252"), declared="x-no-such-charset") == FRENCH


@pytest.mark.parametrize(
    "raw",
    [
        b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01",  # a JPEG's first bytes
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b"PK\x03\x04\x14\x00\x06\x00\x08\x00",
        bytes(range(1, 32)) * 20,  # control bytes without a NUL
    ],
)
def test_binary_bytes_are_refused_as_not_text(raw: bytes) -> None:
    with pytest.raises(ImportFileError, match="binary content, not text"):
        decode_text(raw)


@pytest.mark.parametrize(
    "raw, binary",
    [
        (b"", False),
        (b"hello\tworld\r\n\x0c", False),  # tab, CRLF and form feed are text
        (b"a\x00b", True),
        (b"text " * 100 + b"\x01", False),  # one stray control byte in 500
        (b"\x1b[31mred\x1b[0m", False),  # ANSI colours in a saved log are text
        (b"\x01\x02\x03\x04abcdefgh", True),
    ],
)
def test_looks_binary_flags_nul_bytes_and_control_heavy_starts(raw: bytes, binary: bool) -> None:
    assert looks_binary(raw) is binary


@pytest.mark.parametrize(
    "raw, found",
    [
        (codecs.BOM_UTF32_LE + b"x", ("utf-32-le", 4)),
        (codecs.BOM_UTF16_LE + b"x\x00", ("utf-16-le", 2)),
        (codecs.BOM_UTF8 + b"x", ("utf-8", 3)),
        (b"no mark", None),
    ],
)
def test_bom_codec_names_the_codec_and_the_marks_length(raw: bytes, found: tuple[str, int] | None) -> None:
    assert bom_codec(raw) == found


@pytest.mark.parametrize(
    "name, codec",
    [
        ("UTF-8", "utf-8"),
        ('"windows-1252"', "cp1252"),
        ("latin1", "iso8859-1"),
        ("bogus", None),
        (None, None),
    ],
)
def test_known_codec_maps_declared_names_to_pythons(name: str | None, codec: str | None) -> None:
    assert known_codec(name) == codec
