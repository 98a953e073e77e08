"""Writing a note's file atomically: a temporary file in the same folder, flushed to disk
(fsync), then moved into place in one step, and the folder's entry flushed too. A crash leaves
either the old file or the new one, never half of one; a stray `.*.tmp` file at most.

A new note never replaces a file: it is linked into place (`os.link` fails when the name is
taken), so two writers choosing the same name both succeed, under two names.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .paths import file_stem

MAX_NAME_TRIES = 1000


def _temporary(folder: Path, text: str) -> Path:
    """A flushed temporary file in `folder` holding `text` (UTF-8)."""
    fd, name = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    return Path(name)


def _sync_folder(folder: Path) -> None:
    """Flush the folder's entries (the rename itself) where the platform allows it."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def replace_file(path: Path, text: str) -> None:
    """Put `text` at `path` atomically (replacing what is there)."""
    temporary = _temporary(path.parent, text)
    try:
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_folder(path.parent)


def create_file(folder: Path, title: str, text: str) -> Path:
    """A new `.md` file in `folder` named after `title` (`Title.md`, else `Title 2.md`, …),
    holding `text`; never replaces an existing file."""
    stem = file_stem(title)
    temporary = _temporary(folder, text)
    try:
        for n in range(1, MAX_NAME_TRIES + 1):
            target = folder / (f"{stem}.md" if n == 1 else f"{stem} {n}.md")
            try:
                os.link(temporary, target)
            except FileExistsError:
                continue
            except OSError:  # no hard links here (some network or FAT file systems)
                if target.exists():
                    continue
                os.replace(temporary, target)
            _sync_folder(folder)
            return target
        raise FileExistsError(f"{MAX_NAME_TRIES} notes named {stem!r} already exist")
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
