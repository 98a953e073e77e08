"""An `.mbox` is split from the bytes the import read (never opened again by its name), exactly as
the standard library's `mailbox.mbox` splits the same file (table test over edge cases and the
fixture archives)."""

from __future__ import annotations

import mailbox
from pathlib import Path

import pytest

from knowledge_mcp.sources.media.formats.emails import _mbox_messages
from tests.conftest import FIXTURES

ROOT = FIXTURES.parent
ARCHIVES = sorted([*FIXTURES.rglob("*.mbox"), *(ROOT / "tests").rglob("*.mbox")])
CASES = [
    b"",
    b"From a\n",
    b"From a\nX: 1\n\nbody\n\nFrom b\nY: 2\n\nb2\n",
    b"From a\nX: 1\nFrom b\nZ: 2\n",
    b"junk before\nFrom a\nA: b\n\n\n",
    b"From a\r\nX: 1\r\n\r\nFrom b\r\n",
    b"From a\nX: 1\n\nno newline at the end",
]


def _by_mailbox(raw: bytes, tmp_path: Path) -> list[bytes]:
    path = tmp_path / "box.mbox"
    path.write_bytes(raw)
    box = mailbox.mbox(path, create=False)
    try:
        return [box.get_bytes(key) for key in box.iterkeys()]
    finally:
        box.close()


@pytest.mark.parametrize("raw", CASES)
def test_an_mbox_is_split_from_its_bytes_as_mailbox_splits_it(raw: bytes, tmp_path: Path) -> None:
    assert _mbox_messages(raw) == _by_mailbox(raw, tmp_path)


@pytest.mark.parametrize("archive", ARCHIVES, ids=lambda p: p.name)
def test_each_fixture_archive_splits_into_the_same_messages(archive: Path, tmp_path: Path) -> None:
    raw = archive.read_bytes()
    assert _mbox_messages(raw) == _by_mailbox(raw, tmp_path)
