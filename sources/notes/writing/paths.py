"""Where a written note goes (pure, but for `inside`): its file name from the title, and the
caller's `folder` checked to stay inside the notes folder.

The caller never gives a path: the file name is derived from the title, and `folder` is a
relative sub-folder of plain names. Absolute paths, `..`, hidden names, drive letters and
backslashes are refused with one sentence; `inside` then checks the resolved folder (a symbolic
link out of the notes folder is refused too).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path, PurePosixPath

from ...errors import InvalidArgumentError

MAX_STEM = 80
UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*#^\[\]]+')
RESERVED = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}
)
FOLDER_RULE = "a relative sub-folder of the notes folder, such as projects/2026 (no .., no absolute path)"


def file_stem(title: str) -> str:
    """A file name (without `.md`) for a note titled `title`: the title's own words, with the
    characters file systems or wiki links refuse removed, at most 80 characters."""
    text = unicodedata.normalize("NFC", title)
    text = UNSAFE.sub(" ", text)
    text = re.sub(r"\s+", " ", text).strip(" .")
    text = text[:MAX_STEM].rstrip(" .")
    if not text:
        return "note"
    return f"note {text}" if text.split(".")[0].casefold() in RESERVED else text


def folder_parts(folder: str | None) -> tuple[str, ...]:
    """The names of a `folder` argument (empty: the notes folder itself), or InvalidArgumentError."""
    if folder is None or not folder.strip():
        return ()
    text = folder.strip()
    if "\\" in text or "\x00" in text or re.match(r"^[A-Za-z]:", text) or text.startswith(("/", "~")):
        raise InvalidArgumentError("folder", f"must be {FOLDER_RULE}")
    parts = tuple(part for part in PurePosixPath(text).parts if part not in ("", "."))
    for part in parts:
        if part == ".." or part.startswith(".") or UNSAFE.search(part):
            raise InvalidArgumentError("folder", f"must be {FOLDER_RULE}")
    return parts


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, resolved (links followed), is `root` or lies under it."""
    base = root.resolve()
    resolved = path.resolve()
    return resolved == base or base in resolved.parents


def relative_name(root: Path, path: Path) -> str:
    """`path` relative to `root`, with forward slashes (as tools report it)."""
    return path.resolve().relative_to(root.resolve()).as_posix()
