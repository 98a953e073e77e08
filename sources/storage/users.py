"""User ids and their folders: `<data_dir>/users/<folder_name(user_id)>/`.

A user id is kept exactly as the credential authenticated it (a JWT `sub` is case-sensitive,
RFC 7519; identity providers issue mixed-case opaque ids), so `Bob` and `bob` are two users.
Each user's folder name is an injective, case-safe encoding of the id:

- `a-z`, `0-9`, `_`, `-`, `.` and `@` stand for themselves;
- an upper-case letter is `+` and the letter in lower case (`Bob` -> `+bob`);
- any other character, a `.` at either end of the id, and the first letter of a name that
  Windows reserves (`con`, `nul.x`, `com1`, `lpt9`…) are `=` and the character's two hex
  digits (`con` -> `=63on`, `.x.` -> `=2ex=2e`).

A name holds no upper-case letter, so folding case (macOS, Windows, vfat, casefold ext4) maps
no two names together; `+` and `=` are never themselves, so each name decodes to one id; no
name is `.`, `..`, a reserved device name or ends in a dot or space (which Windows drops).

Folders made by the older rules are renamed once, on the first use of a data dir in a process
(`migrate_user_folders`): before November 2026 a user's folder was the id folded to lower
case, and before that the id itself. An old folder belongs to the id spelled exactly as its
name, so a folder of the folding rule (`users/alice`) stays the lower-case id's, and the
mixed-case subject (`Alice`) starts with an empty folder of its own (`users/+alice`).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from loguru import logger

from ..errors import InvalidArgumentError

USER_ID_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
KEPT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-.@")
UPPER_MARK = "+"
BYTE_MARK = "="
WINDOWS_RESERVED = frozenset(
    ["con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))]
)
_TOKEN_RE = re.compile(r"\+[a-z]|=[0-9a-f]{2}|[a-z0-9_.@-]")


def validate_user_id(user_id: str) -> str:
    """`user_id` unchanged when it is a valid id (`^[A-Za-z0-9_.@-]{1,64}$`, not `.` or `..`),
    else InvalidArgumentError. Case is kept: `Bob` and `bob` are two users. Only ASCII is
    accepted, so a look-alike (full-width `ｂｏｂ`, the Kelvin sign) is refused, never taken for
    the user it resembles."""
    if not USER_ID_RE.fullmatch(user_id or "") or user_id in {".", ".."}:
        raise InvalidArgumentError("user", "must match ^[A-Za-z0-9_.@-]{1,64}$ and not be '.' or '..'")
    return user_id


def folder_name(user_id: str) -> str:
    """The name of the user's folder: injective and free of upper case (see the module)."""
    user_id = validate_user_id(user_id)
    last = len(user_id) - 1
    parts = []
    for index, char in enumerate(user_id):
        if "A" <= char <= "Z":
            parts.append(UPPER_MARK + char.lower())
        elif char in KEPT and not (char == "." and index in (0, last)):
            parts.append(char)
        else:
            parts.append(_escaped(char))
    name = "".join(parts)
    if name.split(".", 1)[0] in WINDOWS_RESERVED:
        name = _escaped(name[0]) + name[1:]
    return name


def _escaped(char: str) -> str:
    return f"{BYTE_MARK}{ord(char):02x}"


def user_of_folder(name: str) -> str | None:
    """The user id whose folder is named `name`, or None when no id's folder is (an old-style
    or foreign folder)."""
    tokens = _TOKEN_RE.findall(name)
    if "".join(tokens) != name:
        return None
    user_id = "".join(_decoded(t) for t in tokens)
    try:
        return user_id if folder_name(user_id) == name else None
    except InvalidArgumentError:
        return None


def _decoded(token: str) -> str:
    if token[0] == UPPER_MARK:
        return token[1].upper()
    return chr(int(token[1:], 16)) if token[0] == BYTE_MARK else token


def user_dir(data_dir: Path, user_id: str) -> Path:
    """The user's data directory; guaranteed to lie inside `data_dir`.

    Resolved once per process and (data dir, user): every request needs it several times, and
    resolving walks the file system component by component.
    """
    return _user_dir(data_dir, validate_user_id(user_id))


@functools.lru_cache(maxsize=4096)
def _user_dir(data_dir: Path, user_id: str) -> Path:
    root = users_root(data_dir)
    path = (root / folder_name(user_id)).resolve()
    if path.parent != root:
        raise InvalidArgumentError("user", "resolves outside the data directory")
    _hint_at_the_folded_folder(root, user_id, path)
    return path


def _hint_at_the_folded_folder(root: Path, user_id: str, path: Path) -> None:
    """A mixed-case id without a folder, beside the lower-case id's: one line saying whose that
    folder is (ids were folded before, so it may hold this id's older data)."""
    folded = root / folder_name(user_id.lower())
    if user_id != user_id.lower() and not path.exists() and folded.is_dir():
        logger.info(
            "user {} has no folder yet; {} belongs to user {} (ids are case-sensitive now: "
            "docs/identity.md says how to move it)",
            user_id,
            f"users/{folded.name}",
            user_id.lower(),
        )


@functools.lru_cache(maxsize=64)
def users_root(data_dir: Path) -> Path:
    """`<data_dir>/users`, resolved, its old-style folders renamed (once per process)."""
    root = (data_dir / "users").resolve()
    migrate_user_folders(root)
    return root


def migrate_user_folders(root: Path) -> int:
    """Rename each folder named by an older rule (the id itself, or folded) to its id's folder
    name; one log line when any was found. A folder whose new name is taken is left in place
    (and counted in that line). Returns how many were renamed."""
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return 0  # no users yet
    renamed = left = 0
    for entry in entries:
        if entry.is_symlink() or not entry.is_dir() or user_of_folder(entry.name) is not None:
            continue
        try:
            target = root / folder_name(entry.name)
        except InvalidArgumentError:
            continue  # not a user folder under any rule
        if target.exists() or target.is_symlink():
            left += 1
            continue
        try:
            entry.rename(target)
        except FileNotFoundError:
            continue  # another process renamed it first
        except OSError:
            left += 1
            continue
        renamed += 1
    if renamed or left:
        logger.log(
            "WARNING" if left else "INFO",
            "user folders: {} renamed to the case-safe naming (docs/identity.md), {} left in place "
            "because their new name is taken",
            renamed,
            left,
        )
    return renamed


def database_path(data_dir: Path, user_id: str, source: str) -> Path:
    return user_dir(data_dir, user_id) / f"{source}.db"
