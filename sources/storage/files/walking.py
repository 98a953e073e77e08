"""Finding the files of an import, and reading one safely.

An import reads only what lies inside the folder it was given: a symbolic link is followed
only when its target resolves inside that folder and is a regular file; a link out of the folder,
a broken or looping link, a link to a folder, and special files (FIFOs, sockets, devices, and
anything under /proc, /sys or /dev) are reported as skipped, never read. Hidden entries are
left out silently, as are files of a type the source does not read.

What the walk found is read later by its resolved path, opened without following any link
(`opening`): a link swapped in after the walk is refused, never followed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...errors import ImportFileError
from .opening import Folders

SYSTEM_FOLDERS = frozenset({"proc", "sys", "dev"})
"""Top-level folders of the system (/proc, /sys, /dev): never read, whatever the link."""


@dataclass(frozen=True)
class Skipped:
    """A file found but not read, and why (reported as a notice)."""

    path: Path
    reason: str


@dataclass(frozen=True)
class Found:
    """A file to import: where it was found (the name it is stored under) and the file read,
    the same path or, for a link inside the folder, the file it led to when it was checked."""

    path: Path
    real: Path

    @classmethod
    def at(cls, path: Path) -> Found:
        return cls(path, path)


class FileTooLargeError(ImportFileError):
    """A file over the import size cap."""


def walk(
    paths: Sequence[Path], extensions: frozenset[str], *, follow: bool = True
) -> Iterator[Found | Skipped]:
    """The files to import (folders walked in sorted order) and the ones skipped, with why.
    `follow`: resolve the given paths (the command line's); else take them as they are (the
    watcher's, under a recorded folder: a link there is refused when the file is opened)."""
    for given in paths:
        root = given.resolve() if follow else given.absolute()
        if _under_system_root(root):
            yield Skipped(root, "a system path (/proc, /sys, /dev); not read")
        elif root.is_dir():
            yield from _walk_folder(root, extensions)
        elif root.exists():
            reason = _not_regular(root)
            yield Skipped(root, reason) if reason else Found.at(root)
        else:
            raise ImportFileError(f"{root}: no such file or folder")


def iter_files(paths: Sequence[Path], extensions: frozenset[str]) -> Iterator[Path]:
    """Only the files `walk` would import."""
    return (entry.path for entry in walk(paths, extensions) if isinstance(entry, Found))


def _walk_folder(root: Path, extensions: frozenset[str]) -> Iterator[Found | Skipped]:
    found: list[tuple[str, os.DirEntry[str], Path]] = []
    folders = [root]
    while folders:
        folder = folders.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    folders.append(folder / entry.name)
                else:
                    found.append((entry.path, entry, folder))
    found.sort(key=lambda row: row[0].split(os.sep))  # by path parts, as Path(...).parts sorts
    for _, entry, folder in found:
        checked = _check(folder / entry.name, entry, root, extensions)  # `/`: one part to parse
        if checked is not None:
            yield checked


def _check(
    path: Path, entry: os.DirEntry[str], root: Path, extensions: frozenset[str]
) -> Found | Skipped | None:
    """What to read if it may be imported, a `Skipped` if it is refused, None if it is silently
    left out."""
    if entry.is_symlink():
        return _check_link(path, root, extensions)
    if path.suffix.lower() not in extensions:
        return None
    if entry.is_file(follow_symlinks=False):
        return Found.at(path)
    reason = _not_regular(path)
    return Skipped(path, reason) if reason else Found.at(path)


def _check_link(path: Path, root: Path, extensions: frozenset[str]) -> Found | Skipped | None:
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return Skipped(path, "broken or looping symbolic link; not followed")
    if target.is_dir():
        return Skipped(path, "symbolic link to a folder; not followed")
    if path.suffix.lower() not in extensions:
        return None
    if not target.is_relative_to(root):
        return Skipped(path, "symbolic link to outside the imported folder; not followed")
    reason = _not_regular(target)
    return Skipped(path, f"symbolic link to {reason}") if reason else Found(path, target)


def _under_system_root(path: Path) -> bool:
    return bool(path.parts[1:2]) and path.parts[1] in SYSTEM_FOLDERS and path.is_absolute()


def _not_regular(path: Path) -> str | None:
    """Why the (resolved) file at `path` must not be read, or None for a regular file."""
    if _under_system_root(path):
        return "a system file (/proc, /sys, /dev); not read"
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"))
    kind = next((name for test, name in kinds if test(mode)), "a special file")
    return f"{kind}, not a regular file; not read"


def read_regular(folders: Folders, path: Path, checked: os.stat_result, max_bytes: int) -> bytes:
    """The bytes of the regular file at the resolved `path` that is the one `checked` (its
    `lstat`), at most `max_bytes`, or an ImportFileError. Opened once without following links and
    without blocking (`opening`), checked on the open file, read no further than the cap."""
    fd, info = folders.open(path, checked)
    try:
        if info.st_size > max_bytes:
            raise FileTooLargeError(too_large(info.st_size, max_bytes))
        raw = _read_up_to(fd, info.st_size, max_bytes + 1)
    finally:
        os.close(fd)
    if len(raw) > max_bytes:
        raise FileTooLargeError(too_large(len(raw), max_bytes))
    return raw


def _read_up_to(fd: int, size: int, limit: int) -> bytes:
    """The file's bytes, at most `limit`: straight reads of the descriptor, the first of the size
    it said it has (a buffered file's `read(limit)` allocates the whole limit, 200 MB by default,
    for every file: most of a folder import's reading time, docs/performance.md)."""
    parts = [os.read(fd, min(size + 1, limit))]
    total = len(parts[0])
    while parts[-1] and total < limit:
        parts.append(os.read(fd, min(max(size, 1 << 16), limit - total)))
        total += len(parts[-1])
    return b"".join(parts)


def too_large(size: int, max_bytes: int) -> str:
    mb = 1024 * 1024
    return (
        f"{size / mb:.1f} MB is over the import size cap of {max_bytes / mb:g} MB "
        "(import_max_file_mb); skipped"
    )
