"""Writing a note's file atomically: a temporary file in the same folder, flushed to disk
(fsync), then moved into place in one step, and the folder's entry flushed too. A crash leaves
either the old file or the new one, never half of one; a stray `.*.tmp` file at most.

Every step is relative to the folder's descriptor, reached without following links
(`storage.opening`): a folder on the way swapped for a link is refused, never entered. A new
note never replaces a file: it is linked into place (`os.link` fails when the name is taken), so
two writers choosing the same name both succeed, under two names; where the file system has no
hard links, it is created under its name with `O_EXCL` (a crash may then leave a partial new
file, but no existing file is ever replaced).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from pathlib import Path

from ...storage.files.opening import WALKS, Folders, create_in, make_folders, open_folder
from ...storage.files.walking import read_regular
from .paths import file_stem

MAX_NAME_TRIES = 1000
MAX_READ_BYTES = 200 * 1024 * 1024


def _write(fd: int, text: str) -> None:
    """`text` (UTF-8) into the new file `fd`, flushed to disk, and the descriptor closed."""
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _temporary(folder: int, text: str) -> str:
    """The name of a flushed temporary file in the folder holding `text`."""
    while True:
        name = f".{secrets.token_hex(8)}.tmp"
        try:
            fd = create_in(folder, name)
        except FileExistsError:
            continue
        try:
            _write(fd, text)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=folder)
            raise
        return name


def _sync_folder(folder: int) -> None:
    """Flush the folder's entries (the rename itself) where the platform allows it."""
    with contextlib.suppress(OSError):
        fd = os.open(".", os.O_RDONLY, dir_fd=folder)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_note(path: Path) -> bytes:
    """The bytes of the note's file at the resolved `path`, opened once without following links
    and checked to be the regular file that was looked at."""
    with Folders() as folders:
        return read_regular(folders, path, folders.lstat(path), MAX_READ_BYTES)


def replace_file(path: Path, text: str) -> None:
    """Put `text` at the resolved `path` atomically (replacing what is there: a link there is
    replaced itself, never written through)."""
    if not WALKS:
        return _replace_by_name(path, text)
    folder = open_folder(path.parent)
    try:
        temporary = _temporary(folder, text)
        try:
            os.replace(temporary, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise
        _sync_folder(folder)
    finally:
        os.close(folder)


def create_file(root: Path, parts: tuple[str, ...], title: str, text: str) -> Path:
    """A new `.md` file in `root`/`parts` (folders made as needed, none of them a link) named
    after `title` (`Title.md`, else `Title 2.md`, …), holding `text`; never replaces a file."""
    if not WALKS:
        return _create_by_name(root.joinpath(*parts), title, text)
    folder = make_folders(root, parts)
    try:
        name = _create_in(folder, file_stem(title), text)
        _sync_folder(folder)
    finally:
        os.close(folder)
    return root.joinpath(*parts, name)


def _names(stem: str) -> list[str]:
    return [f"{stem}.md" if n == 1 else f"{stem} {n}.md" for n in range(1, MAX_NAME_TRIES + 1)]


def _create_in(folder: int, stem: str, text: str) -> str:
    temporary = _temporary(folder, text)
    try:
        for name in _names(stem):
            try:
                os.link(temporary, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
            except FileExistsError:
                continue
            except OSError:  # no hard links here (some network or FAT file systems)
                try:
                    fd = create_in(folder, name)
                except FileExistsError:
                    continue
                _write(fd, text)
            return name
        raise FileExistsError(f"{MAX_NAME_TRIES} notes named {stem!r} already exist")
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)


def _replace_by_name(path: Path, text: str) -> None:
    """`replace_file` where there is no `dir_fd` (Windows): a temporary file, then one rename."""
    fd, name = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)
    _write(fd, text)
    os.replace(name, path)


def _create_by_name(folder: Path, title: str, text: str) -> Path:
    """`create_file` where there is no `dir_fd` (Windows): each name tried with `O_EXCL`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in _names(file_stem(title)):
        try:
            fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0))
        except FileExistsError:
            continue
        _write(fd, text)
        return folder / name
    raise FileExistsError(f"{MAX_NAME_TRIES} notes named {title!r} already exist")
