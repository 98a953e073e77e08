"""One rule for every name a note write makes: a folder part the caller gives is refused when it
breaks it, a file name made from a title is made to keep it. At most 255 bytes in UTF-8, no
bidirectional controls or other invisible format characters, no Windows device names, no
trailing dot or space; folders at most 12 levels deep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.errors import InvalidArgumentError
from knowledge_mcp.sources.notes.writing.paths import MAX_NAME_BYTES, file_stem, folder_parts, name_problem
from tests.conftest import call

pytestmark = pytest.mark.anyio

REFUSED_FOLDERS = [
    # (folder, words the refusal says)
    ("a" * 256, "256 bytes"),
    ("é" * 128, "256 bytes"),  # 128 characters, 256 bytes
    ("projects/" + "😀" * 64, "its part 2 is 256 bytes"),
    ("invoice\u202efdp.exe", "U+202E, a bidirectional control"),
    ("a\u2066b", "U+2066, a bidirectional control"),
    ("pay\u200bments", "U+200B, an invisible format character"),
    ("x\u00ady", "U+00AD, an invisible format character"),  # soft hyphen
    ("\ufeffinbox", "U+FEFF, an invisible format character"),
    ("CON", "Windows reserves"),
    ("projects/nul", "its part 2 is a device name"),
    ("com1.txt", "Windows reserves"),
    ("Lpt9.md", "Windows reserves"),
    ("aux .x", "Windows reserves"),
    ("drafts./x", "ends in a dot or a space"),
    ("drafts /x", "ends in a dot or a space"),
    ("/".join("abcdefghijklm"), "has 13 levels; at most 12"),
]


@pytest.mark.parametrize(("folder", "says"), REFUSED_FOLDERS)
def test_a_folder_part_breaking_the_name_rule_is_refused_with_a_sentence(folder: str, says: str) -> None:
    with pytest.raises(InvalidArgumentError) as refused:
        folder_parts(folder)
    message = str(refused.value)
    assert message.startswith("folder: ") and says in message, message
    assert "\n" not in message


@pytest.mark.parametrize(
    "folder",
    ["a" * 255, "é" * 127, "Console", "com10", "conference/notes", "2026/q1", "/".join("abcdefghijkl")],
)
def test_names_within_the_rule_stay_accepted(folder: str) -> None:
    assert folder_parts(folder) == tuple(folder.split("/"))


HOSTILE_TITLES = [
    "😀" * 80,
    "é" * 300,
    "CON",
    "nul.txt",
    "Meeting notes.",
    "trailing space ",
    "x" * 1000,
    "a\u200bb",
    "日本語のタイトル" * 20,
    "..",
    "COM1.report",
]


@pytest.mark.parametrize("title", HOSTILE_TITLES)
def test_a_file_name_made_from_any_title_keeps_the_rule(title: str) -> None:
    stem = file_stem(title)
    for name in (f"{stem}.md", f"{stem} 999.md"):
        assert name_problem(name) is None, (name, name_problem(name))
        assert len(name.encode("utf-8")) <= MAX_NAME_BYTES


async def test_a_title_of_80_emoji_makes_a_note_with_a_file_name_under_255_bytes(
    data_dir: Path, client_factory: Any
) -> None:
    async with client_factory() as client:
        made = await call(client, "notes_create", title="😀" * 80, content="a note about smiling")
        found = await call(client, "notes_search", query="smiling")
    name = Path(made["path"]).name
    assert len(name.encode("utf-8")) <= MAX_NAME_BYTES and name.startswith("😀")
    assert (data_dir / "users" / "local" / "notes" / made["path"]).is_file()
    assert [r["uri"] for r in found["results"]] == [made["uri"]]


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"folder": "a" * 256}, "folder: its name is 256 bytes in UTF-8; a name may have at most 255"),
        ({"folder": "drafts\u202e"}, "folder: its name holds U+202E"),
        ({"folder": "CON"}, "folder: its name is a device name Windows reserves"),
        ({"title": "report\u202etxt.exe"}, "title: holds U+202E, a bidirectional control"),
        ({"title": "zero\u200bwidth"}, "title: holds U+200B, an invisible format character"),
    ],
)
async def test_a_note_write_breaking_the_name_rule_is_a_tool_error_naming_the_field(
    data_dir: Path, client_factory: Any, arguments: dict[str, str], says: str
) -> None:
    async with client_factory() as client:
        refused = await client.call_tool("notes_create", {"title": "t", "content": "c", **arguments})
        assert (await client.list_tools()).tools  # still serving
    assert refused.is_error and says in refused.content[0].text, refused.content[0].text
    assert not list(data_dir.rglob("*.md"))


async def test_a_title_with_a_joined_emoji_is_kept_and_its_file_name_leaves_the_joiner_out(
    data_dir: Path, client_factory: Any
) -> None:
    title = "Pairing notes \U0001f469\u200d\U0001f4bb"
    async with client_factory() as client:
        made = await call(client, "notes_create", title=title, content="a note about pairing")
        got = await call(client, "notes_get", note_id=made["uri"])
    assert got["meta"]["title"] == title
    name = Path(made["path"]).name
    assert "\u200d" not in name and name_problem(name) is None
