"""Why a file could not be imported, as a sentence about the file (never an exception's class).

"nested too deeply to read", "not valid JSON: Expecting value at line 3, column 1", "not a
valid PDF: …": what a person can check in the file. The parsers' own errors (`ImportFileError`,
and the `ValueError`s they raise with a sentence) are already that and pass through.
"""

from __future__ import annotations

import json
import tomllib
import zipfile

MAX_DETAIL = 200


def why_unreadable(exc: BaseException, failed: str = "could not be read") -> str:
    """One line saying what is wrong with the file that raised `exc` while it was parsed (or,
    with `failed` = "could not be stored", written)."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    if isinstance(exc, MemoryError):
        return "too large to read into memory"
    if isinstance(exc, UnicodeDecodeError):
        return f"not valid {exc.encoding} text (byte {exc.start} cannot be decoded)"
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, tomllib.TOMLDecodeError):
        return f"not valid TOML: {_detail(exc)}"
    if isinstance(exc, zipfile.BadZipFile | zipfile.LargeZipFile):
        return f"not a valid ZIP archive (as .docx and .epub files are): {_detail(exc)}"
    family = type(exc).__module__.split(".")[0]
    if family == "yaml":
        return f"not valid YAML: {_detail(exc)}"
    if family in {"lxml", "xml"}:
        return f"not valid XML: {_detail(exc)}"
    if family == "pypdf":
        return f"not a valid PDF: {_detail(exc)}"
    detail = _detail(exc)
    if isinstance(exc, ValueError) and detail:
        return detail  # our parsers' own sentences ("truncated PDF: …")
    return f"{failed} ({detail})" if detail else failed


def _detail(exc: BaseException) -> str:
    """The first line of the exception's own message, cut short."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"
