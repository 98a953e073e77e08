"""Why a file could not be imported is a sentence about the file, never an exception's class name."""

from __future__ import annotations

import io
import json
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from knowledge_mcp.sources.storage.damage.unreadable import why_unreadable
from tests.conftest import import_into

pytestmark = pytest.mark.anyio


def raised(action: Callable[[], object]) -> BaseException:
    try:
        action()
    except Exception as exc:
        return exc
    raise AssertionError("nothing was raised")


@pytest.mark.parametrize(
    ("action", "says"),
    [
        (lambda: json.loads("[" * 100_000 + "]" * 100_000), "nested too deeply to read"),
        (lambda: json.loads('{"a": }'), "not valid JSON: Expecting value (line 1, column 7)"),
        (lambda: b"\xff\xfe\xfa".decode("utf-8"), "not valid utf-8 text (byte 0 cannot be decoded)"),
        (lambda: tomllib.loads("a = = 1"), "not valid TOML: Invalid value (at line 1, column 5)"),
        (lambda: yaml.safe_load("a: [1, 2"), "not valid YAML: while parsing a flow sequence"),
        (lambda: zipfile.ZipFile(io.BytesIO(b"not a zip")), "not a valid ZIP archive"),
        (lambda: {}["title"], "could not be read ('title')"),
        (lambda: int("x"), "invalid literal for int() with base 10: 'x'"),
    ],
)
def test_a_failure_reason_says_what_is_wrong_with_the_file(action: Callable[[], object], says: str) -> None:
    reason = why_unreadable(raised(action))
    assert reason.startswith(says)
    assert "Error" not in reason and "\n" not in reason


async def test_an_import_names_deep_nesting_and_a_broken_pdf_in_plain_words(tmp_path: Path) -> None:
    chats, media = tmp_path / "chats", tmp_path / "media"
    chats.mkdir(), media.mkdir()
    (chats / "conversations.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    (media / "report.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 200 + b"\n%%EOF\n")
    data_dir = tmp_path / "data"
    reasons = [f["reason"] for f in (await import_into(data_dir, "chats", chats)).failures]
    reasons += [f["reason"] for f in (await import_into(data_dir, "media", media)).failures]
    assert reasons[0] == "nested too deeply to read"
    assert reasons[1].startswith("not a valid PDF: ")
    assert not any("Error" in r for r in reasons)
