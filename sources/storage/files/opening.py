"""Open once, then check what was opened: every file read or written on a user's behalf.

A path is checked (found inside the imported folder, resolved, a regular file) and then opened
by walking its parts from `/`: each folder with `O_NOFOLLOW | O_DIRECTORY` relative to the one
before (`dir_fd`), the file itself with `O_NOFOLLOW`. The open file is checked with `fstat` (a
regular file, with the device and inode that were checked), and what is read comes from that
descriptor. So a symbolic link swapped in after the check, anywhere on the path, is refused
instead of followed: the check and the read concern the same file. Paths given here are
resolved ones (an import resolves its folders; the watcher's are recorded resolved), so a link
on the way means the path changed since.

New files are created with `O_EXCL | O_NOFOLLOW` relative to their folder's descriptor, never by
a write that replaces a name; folders are made with `mkdir(dir_fd=...)` and opened again without
following links.

Linux and macOS. Where the platform has no `dir_fd` or `O_NOFOLLOW` (Windows), a file is checked
with `lstat`, opened by name, and refused unless the open file is the one checked
(docs/files-and-links.md).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import Self

from ...errors import ImportFileError

NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
WALKS = bool(NO_FOLLOW) and os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd
"""Whether paths are walked part by part without following links (Linux, macOS)."""
_COMMON = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
FOLDER_FLAGS = (getattr(os, "O_PATH", 0) or os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) | NO_FOLLOW | _COMMON
"""A folder on the way: O_PATH where there is one (Linux: only search permission is needed)."""
FILE_FLAGS = os.O_RDONLY | NO_FOLLOW | getattr(os, "O_NONBLOCK", 0) | _COMMON
"""The file read: never a link, and a FIFO swapped in cannot block the open."""
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW | _COMMON
REFUSED_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR})
"""What `O_NOFOLLOW` answers for a link (ELOOP; EMLINK on FreeBSD) or `O_DIRECTORY` for a link or
a file where a folder was (ENOTDIR)."""


class LinkRefusedError(ImportFileError):
    """A symbolic link (or a file where a folder was) on the way to a checked path."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(f"a symbolic link on the way to {path}; not followed")


class ChangedFileError(ImportFileError):
    """The file opened is not the one checked (replaced in between), or not a regular file."""


Identity = tuple[int, int]


def identity(info: os.stat_result) -> Identity:
    return info.st_dev, info.st_ino


def _refusal(exc: OSError, path: Path | str) -> Exception:
    return LinkRefusedError(path) if exc.errno in REFUSED_ERRNOS else exc


def open_folder(path: Path) -> int:
    """A descriptor of the folder at the absolute `path`, no part of it followed as a link."""
    fd = os.open(path.anchor or "/", FOLDER_FLAGS & ~NO_FOLLOW)
    for part in path.parts[1:]:
        try:
            fd, previous = os.open(part, FOLDER_FLAGS, dir_fd=fd), fd
        except OSError as exc:
            os.close(fd)
            raise _refusal(exc, path) from None
        os.close(previous)
    return fd


def make_folders(root: Path, parts: tuple[str, ...]) -> int:
    """A descriptor of `root`/`parts`, the missing folders made with `mkdir(dir_fd=)`; each part
    opened again without following links (a link swapped in is refused, never entered)."""
    fd = open_folder(root)
    for part in parts:
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=fd)
            fd, previous = os.open(part, FOLDER_FLAGS, dir_fd=fd), fd
        except OSError as exc:
            os.close(fd)
            raise _refusal(exc, root.joinpath(*parts)) from None
        os.close(previous)
    return fd


class Folders:
    """Files opened by absolute path without following links, the last folder's descriptor kept
    (the files of one folder come one after another). Use in one thread at a time, and close."""

    def __init__(self) -> None:
        self._path = ""
        self._fd = -1
        self._last: tuple[Path | None, str] = (None, "")
        """The last file asked for and its name (a file is checked, then opened)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._path, self._fd, self._last = "", -1, (None, "")

    def folder(self, path: str) -> int:
        """The descriptor of the folder at `path` (kept until another folder is asked for)."""
        if path != self._path:
            fd = open_folder(Path(path))
            self.close()
            self._path, self._fd = path, fd
        return self._fd

    def _in_folder(self, path: Path) -> tuple[str, int]:
        """The file's name, and its folder's descriptor."""
        last, name = self._last
        if last is not path:
            folder, name = os.path.split(path)
            if folder != self._path:
                self.folder(folder)
            self._last = (path, name)
        return name, self._fd

    def lstat(self, path: Path) -> os.stat_result:
        """The file's own status (a link is not followed), reached without following links."""
        if not WALKS:
            return os.lstat(path)
        name, folder = self._in_folder(path)
        return os.stat(name, dir_fd=folder, follow_symlinks=False)

    def open(self, path: Path, checked: os.stat_result) -> tuple[int, os.stat_result]:
        """A read descriptor of the regular file at `path` that is the one `checked` (its
        `lstat`), and its status: refused when a link is on the way or the file was replaced."""
        try:
            if WALKS:
                name, folder = self._in_folder(path)
                fd = os.open(name, FILE_FLAGS, dir_fd=folder)
            else:
                fd = os.open(path, FILE_FLAGS)
        except OSError as exc:
            raise _refusal(exc, path) from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ChangedFileError("not a regular file; not read")
            if identity(info) != identity(checked):
                raise ChangedFileError("replaced while it was being read; read again at its next change")
        except BaseException:
            os.close(fd)
            raise
        return fd, info


def create_in(folder_fd: int, name: str) -> int:
    """A new file `name` in the folder (O_EXCL: never an existing name, never through a link)."""
    return os.open(name, CREATE_FLAGS, 0o644, dir_fd=folder_fd)
