"""Where a written note goes (pure, but for `inside`): its file name from the title, and the
caller's `folder` checked to stay inside the notes folder.

The caller never gives a path: the file name is derived from the title, and `folder` is a
relative sub-folder of plain names. Absolute paths, `..`, hidden names, drive letters and
backslashes are refused with one sentence; `inside` then checks the resolved folder (a symbolic
link out of the notes folder is refused too).

One rule for every name written (`name_problem`): at most 255 bytes in UTF-8 (file systems count
bytes: 80 emoji are 320), no bidirectional controls or other invisible format characters
(Unicode category Cf: U+202E makes `evil\u202etxt.md` read as `evildm.txt`), no name Windows
reserves (CON, PRN, AUX, NUL, COM1-9, LPT1-9, with any extension), no trailing dot or space. A
folder part breaking it is refused; a title's file name is made to keep it (`file_stem`).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path, PurePosixPath

from ...errors import InvalidArgumentError

MAX_STEM = 80
MAX_NAME_BYTES = 255
MAX_STEM_BYTES = MAX_NAME_BYTES - len(" 1000.md")  # room for the suffix of a taken name
MAX_FOLDER_DEPTH = 12
MAX_FOLDER_BYTES = 1024
BIDI_CONTROLS = frozenset(chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)))
UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*#^\[\]]+')
RESERVED = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}
)
FOLDER_RULE = "a relative sub-folder of the notes folder, such as projects/2026 (no .., no absolute path)"


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a file or folder name on every system, in a few words, or None."""
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_NAME_BYTES:
        return f"is {size} bytes in UTF-8; a name may have at most {MAX_NAME_BYTES}"
    for ch in name:
        if ch in BIDI_CONTROLS:
            return f"holds U+{ord(ch):04X}, a bidirectional control (it makes a name read as another)"
        if unicodedata.category(ch) == "Cf":
            return f"holds U+{ord(ch):04X}, an invisible format character"
    if name.endswith((".", " ")):
        return "ends in a dot or a space, which Windows drops"
    if _is_reserved(name):
        return "is a device name Windows reserves (CON, PRN, AUX, NUL, COM1-9, LPT1-9)"
    return None


def _is_reserved(name: str) -> bool:
    return name.split(".")[0].rstrip(" ").casefold() in RESERVED


def file_stem(title: str) -> str:
    """A file name (without `.md`) for a note titled `title`: the title's own words, with the
    characters file systems or wiki links refuse removed, at most 80 characters and 247 bytes;
    the name (with `.md`, and a ` 2` … when taken) keeps `name_problem`'s rule."""
    text = unicodedata.normalize("NFC", title)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    text = UNSAFE.sub(" ", text)
    text = re.sub(r"\s+", " ", text).strip(" .")
    text = _cut_bytes(text[:MAX_STEM], MAX_STEM_BYTES).rstrip(" .")
    if not text:
        return "note"
    return f"note {text}" if _is_reserved(text) else text


def _cut_bytes(text: str, limit: int) -> str:
    """`text`'s longest prefix of at most `limit` UTF-8 bytes (never half a character)."""
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")


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
    if len(parts) > MAX_FOLDER_DEPTH:
        raise InvalidArgumentError("folder", f"has {len(parts)} levels; at most {MAX_FOLDER_DEPTH}")
    if len(text.encode("utf-8")) > MAX_FOLDER_BYTES:
        raise InvalidArgumentError("folder", f"is longer than {MAX_FOLDER_BYTES} bytes in UTF-8")
    for number, part in enumerate(parts, 1):
        problem = name_problem(part)
        if problem is not None:
            which = "its name" if len(parts) == 1 else f"its part {number}"
            raise InvalidArgumentError("folder", f"{which} {problem}; choose another name")
    return parts


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, resolved (links followed), is `root` or lies under it."""
    base = root.resolve()
    resolved = path.resolve()
    return resolved == base or base in resolved.parents


def relative_name(root: Path, path: Path) -> str:
    """`path` relative to `root`, with forward slashes (as tools report it)."""
    return path.resolve().relative_to(root.resolve()).as_posix()
