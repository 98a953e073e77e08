"""User ids kept exactly as authenticated, and their folder names: injective on every file system
(case-folding ones too), never `.`, `..` or a name Windows reserves; old folders renamed once."""

from __future__ import annotations

import itertools
import random
import string
from pathlib import Path

import pytest
from loguru import logger

from knowledge_mcp.sources.errors import InvalidArgumentError
from knowledge_mcp.sources.storage.users import (
    WINDOWS_RESERVED,
    folder_name,
    migrate_user_folders,
    user_dir,
    user_of_folder,
    validate_user_id,
)

ALPHABET = string.ascii_letters + string.digits + "_.@-"
"""Every character a user id may hold."""
PORTABLE = set(string.ascii_lowercase + string.digits + "_.@-+=")
"""Characters every file system takes in a name, in one case only."""


def ids_up_to_two() -> list[str]:
    """Every valid id of one or two characters (66 + 66² less `.` and `..`: 4,420)."""
    ids = [*ALPHABET, *("".join(pair) for pair in itertools.product(ALPHABET, repeat=2))]
    return [i for i in ids if i not in {".", ".."}]


def sampled_longer(count: int = 5_000) -> list[str]:
    """Random ids of 3..64 characters, each with a case variant and a dotted/reserved variant, so
    the sample is dense in ids that differ only in case or only where escapes apply."""
    rng = random.Random(25)
    found: set[str] = set()
    for _ in range(count):
        user = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(3, 64)))
        flipped = "".join(c.swapcase() if rng.random() < 0.3 else c for c in user)
        stem = rng.choice(sorted(WINDOWS_RESERVED))
        found |= {user, flipped, f".{user[:60]}.", f"{stem}.{user[:50]}", f"{stem.upper()}{user[:50]}"}
    return sorted(found)


def test_every_id_of_up_to_two_characters_has_a_folder_of_its_own_even_when_case_is_folded() -> None:
    ids = ids_up_to_two()
    names = [folder_name(i).casefold() for i in ids]
    assert len(ids) == 4_420 and len(set(names)) == len(ids)


def test_sampled_longer_ids_have_folders_of_their_own_even_when_case_is_folded() -> None:
    ids = sampled_longer()
    assert len({folder_name(i).casefold() for i in ids}) == len(ids)


def test_every_folder_name_is_portable_and_leads_back_to_its_id() -> None:
    for user in [*ids_up_to_two(), *sampled_longer(1_000)]:
        name = folder_name(user)
        assert set(name) <= PORTABLE and name == name.casefold(), user
        assert not name.startswith(".") and not name.endswith((".", " ")), user  # so never `.`, `..`
        assert name.split(".")[0] not in WINDOWS_RESERVED, user
        assert len(name.encode()) <= 255, user
        assert user_of_folder(name) == user, user


@pytest.mark.parametrize(
    ("user", "name"),
    [
        ("alice", "alice"),  # a lower-case id keeps the folder it had under the folding rule
        ("bob@example.org", "bob@example.org"),
        ("Bob", "+bob"),
        ("BOB", "+b+o+b"),
        ("con", "=63on"),
        ("nul.txt", "=6eul.txt"),
        ("Con", "+con"),
        ("com10", "com10"),
        (".alice", "=2ealice"),
        ("alice.", "alice=2e"),
        ("...", "=2e.=2e"),
    ],
)
def test_folder_names_read_as_their_ids(user: str, name: str) -> None:
    assert folder_name(user) == name


@pytest.mark.parametrize("name", ["Alice", "con", "alice.", ".alice", "+B", "=41", "=2", "a b", "+", ".."])
def test_a_name_no_id_is_given_belongs_to_nobody(name: str) -> None:
    assert user_of_folder(name) is None


@pytest.mark.parametrize("user", ["Bob", "bob", "BOB", "00uHese3bqXPBMq1", "Alice@Example.org"])
def test_a_user_id_is_kept_exactly_as_given(user: str) -> None:
    assert validate_user_id(user) == user


@pytest.mark.parametrize("user", ["\uff42ob", "\u212aate", "\u0130", "Ålice", ".", "..", "a/b", "a b", ""])
def test_an_id_that_is_not_plain_ascii_is_refused_not_taken_for_its_look_alike(user: str) -> None:
    with pytest.raises(InvalidArgumentError):
        folder_name(user)


def test_bob_and_bob_in_capitals_get_two_folders(tmp_path: Path) -> None:
    upper, lower = user_dir(tmp_path, "Bob"), user_dir(tmp_path, "bob")
    assert upper != lower and upper.parent == lower.parent == (tmp_path / "users").resolve()
    assert (upper.name, lower.name) == ("+bob", "bob")


def make_folders(root: Path, *names: str) -> None:
    for name in names:
        (root / name).mkdir(parents=True)
        (root / name / "notes.db").write_text(name, encoding="utf-8")


def test_old_folders_are_renamed_once_to_the_folder_of_the_id_spelled_as_their_name(tmp_path: Path) -> None:
    root = tmp_path / "users"
    make_folders(root, "alice", "Carol", "con", "dave.", "+erin")
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="INFO", format="{message}")
    try:
        assert migrate_user_folders(root) == 3
        assert migrate_user_folders(root) == 0
    finally:
        logger.remove(sink)
    names = sorted(p.name for p in root.iterdir())
    assert names == ["+carol", "+erin", "=63on", "alice", "dave=2e"]
    assert (root / "+carol" / "notes.db").read_text(encoding="utf-8") == "Carol"
    assert (root / "alice" / "notes.db").read_text(encoding="utf-8") == "alice"
    assert len(lines) == 1 and "3 renamed" in lines[0] and "Carol" not in lines[0]


def test_an_old_folder_whose_new_name_is_taken_is_left_in_place_and_said_so(tmp_path: Path) -> None:
    root = tmp_path / "users"
    make_folders(root, "Bob", "+bob", "not a user", ".hidden-by-someone-else")
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="INFO", format="{level} {message}")
    try:
        assert migrate_user_folders(root) == 1  # `.hidden-by-someone-else` is the id's own old folder
    finally:
        logger.remove(sink)
    assert sorted(p.name for p in root.iterdir()) == [
        "+bob",
        "=2ehidden-by-someone-else",
        "Bob",
        "not a user",
    ]
    assert (root / "+bob" / "notes.db").read_text(encoding="utf-8") == "+bob"
    assert len(lines) == 1 and lines[0].startswith("WARNING") and "1 left in place" in lines[0]


def test_the_first_use_of_a_data_dir_migrates_it_so_the_lower_case_id_finds_the_folded_folder(
    tmp_path: Path,
) -> None:
    make_folders(tmp_path / "users", "Zoe", "zed")
    assert (user_dir(tmp_path, "Zoe") / "notes.db").read_text(encoding="utf-8") == "Zoe"
    assert (user_dir(tmp_path, "zed") / "notes.db").read_text(encoding="utf-8") == "zed"
    assert not user_dir(tmp_path, "Zed").exists()


def test_a_mixed_case_id_without_a_folder_is_told_whose_the_lower_case_folder_is(tmp_path: Path) -> None:
    make_folders(tmp_path / "users", "alice")
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="INFO", format="{message}")
    try:
        user_dir(tmp_path, "Alice")
        user_dir(tmp_path, "Alice")
        user_dir(tmp_path, "alice")
    finally:
        logger.remove(sink)
    assert len(lines) == 1 and "users/alice belongs to user alice" in lines[0]
