"""Open once, then check what was opened (`storage.opening`): a link swapped in after a check is
refused, never followed, whether it is the file itself or a folder on the way, and a file
replaced between the check and the open is not read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from knowledge_mcp.sources.storage.files.opening import (
    ChangedFileError,
    Folders,
    LinkRefusedError,
    open_folder,
)
from knowledge_mcp.sources.storage.files.walking import read_regular
from tests.links import CANARY, vault_and_outside


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A vault with one note, and an outside file holding a canary (of another size)."""
    return vault_and_outside(tmp_path)


def test_a_file_behind_a_link_is_refused_when_opened(layout: tuple[Path, Path]) -> None:
    vault, outside = layout
    (vault / "link.md").symlink_to(outside)
    with Folders() as folders, pytest.raises(LinkRefusedError):
        folders.open(vault / "link.md", os.stat(outside))


def test_a_folder_on_the_way_that_became_a_link_is_refused(layout: tuple[Path, Path], tmp_path: Path) -> None:
    vault, _ = layout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "inside.md").write_text(CANARY, encoding="utf-8")
    moved = tmp_path / "moved"
    vault.rename(moved)
    vault.symlink_to(elsewhere)
    with pytest.raises(LinkRefusedError):
        open_folder(vault)
    with Folders() as folders, pytest.raises(LinkRefusedError):
        folders.lstat(vault / "inside.md")


def test_a_file_replaced_between_the_check_and_the_open_is_not_read(layout: tuple[Path, Path]) -> None:
    vault, _ = layout
    note = vault / "inside.md"
    with Folders() as folders:
        checked = folders.lstat(note)
        replacement = vault / ".swap"
        replacement.write_text(CANARY, encoding="utf-8")
        os.replace(replacement, note)
        with pytest.raises(ChangedFileError):
            read_regular(folders, note, checked, 1 << 20)


def test_the_checked_file_is_read_from_the_descriptor_that_was_opened(layout: tuple[Path, Path]) -> None:
    vault, _ = layout
    with Folders() as folders:
        note = vault / "inside.md"
        assert read_regular(folders, note, folders.lstat(note), 1 << 20).startswith(b"# Inside")
