"""Finding an import's files: nothing outside the folder, no special files, every refusal a notice;
and the safe forms of file names that are not valid UTF-8 (table tests)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from knowledge_mcp.sources.notes.source import NotesSource
from knowledge_mcp.sources.storage.files.walking import Skipped, iter_files, walk
from knowledge_mcp.sources.storage.naming import scrub, shown, stored_path
from tests.conftest import FIXTURES, import_into

EXTENSIONS = NotesSource().extensions


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """The notes fixtures, with the links and special files a real home folder can hold."""
    folder = tmp_path / "vault"
    shutil.copytree(FIXTURES / "notes", folder)
    (folder / "secrets.md").symlink_to("/etc/passwd")
    (folder / "environ.md").symlink_to("/proc/self/environ")
    (folder / "outside.md").symlink_to(tmp_path / "elsewhere.md")
    (tmp_path / "elsewhere.md").write_text("# Not in the vault\n", encoding="utf-8")
    (folder / "again.md").symlink_to(folder / "recipes" / "weeknight-dal.md")
    (folder / "dangling.md").symlink_to(folder / "gone.md")
    (folder / "loop.md").symlink_to(folder / "loop.md")
    (folder / "recipes-link").symlink_to(folder / "recipes")
    (folder / "up").symlink_to(folder)
    os.mkfifo(folder / "pipe.md")
    return folder


def _skipped(entries: list[Path | Skipped]) -> dict[str, str]:
    return {e.path.name: e.reason for e in entries if isinstance(e, Skipped)}


def test_links_out_of_the_folder_special_files_and_folder_links_are_skipped_with_a_reason(
    vault: Path,
) -> None:
    skipped = _skipped(list(walk([vault], EXTENSIONS)))
    assert set(skipped) == {
        "secrets.md",
        "environ.md",
        "outside.md",
        "dangling.md",
        "loop.md",
        "recipes-link",
        "up",
        "pipe.md",
    }
    assert "outside the imported folder" in skipped["secrets.md"]
    assert "outside the imported folder" in skipped["environ.md"]
    assert "FIFO" in skipped["pipe.md"]
    assert "folder" in skipped["recipes-link"]


def test_a_link_to_a_file_inside_the_folder_is_imported_and_nothing_is_found_twice(vault: Path) -> None:
    files = list(iter_files([vault], EXTENSIONS))
    assert vault / "again.md" in files
    assert len(files) == len(set(files))
    assert not any("recipes-link" in p.parts or "up" in p.parts for p in files)
    assert all(p.resolve().is_relative_to(vault) for p in files)


def test_a_system_file_named_on_the_command_line_is_refused(tmp_path: Path) -> None:
    entries = list(walk([Path("/proc/self/environ")], EXTENSIONS | {""}))
    assert len(entries) == 1 and isinstance(entries[0], Skipped)
    assert "system" in entries[0].reason


@pytest.mark.anyio
async def test_an_import_never_stores_the_environment_or_passwd_reached_through_a_link(
    vault: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KNOWLEDGE_MCP_JWT_SECRET", "sekrit-quokka-4711")
    summary = await import_into(data_dir, "notes", vault)
    assert summary.files_failed == 0
    noted = {Path(n["path"]).name for n in summary.notices}
    assert {"secrets.md", "environ.md", "outside.md", "pipe.md"} <= noted
    raw = (data_dir / "users" / "local" / "notes.db").read_bytes()
    assert b"sekrit-quokka-4711" not in raw
    assert b"root:x:0:0" not in raw
    assert b"Not in the vault" not in raw


NAMES = [
    ("/notes/plain.md", "/notes/plain.md", "/notes/plain.md"),
    ("/notes/caf\u00e9.md", "/notes/caf\u00e9.md", "/notes/caf\u00e9.md"),
    ("/notes/bad\udcffname.md", "/notes/bad\\xffname.md", "/notes/bad\\xffname.md"),
    ("/notes/latin1-caf\udce9.md", "/notes/latin1-caf\\xe9.md", "/notes/latin1-caf\\xe9.md"),
    ("/notes/two\nlines.md", "/notes/two\nlines.md", "/notes/two\\nlines.md"),
]


@pytest.mark.parametrize(("name", "stored", "printed"), NAMES)
def test_a_file_name_is_stored_as_valid_utf8_and_printed_on_one_line(
    name: str, stored: str, printed: str
) -> None:
    assert str(stored_path(Path(name))) == stored
    str(stored_path(Path(name))).encode("utf-8")  # binds to SQLite
    assert shown(Path(name)) == printed
    assert "\n" not in shown(Path(name))


SCRUBBED = [
    ("plain", "plain"),
    ("bad\udcffname", "bad\ufffdname"),
    (["a\udc80", "b"], ["a\ufffd", "b"]),
    ({"file_name": "x\udcff.md", "n": 3}, {"file_name": "x\ufffd.md", "n": 3}),
]


@pytest.mark.parametrize(("value", "expected"), SCRUBBED)
def test_scrub_replaces_each_lone_surrogate_by_one_replacement_character(
    value: object, expected: object
) -> None:
    assert scrub(value) == expected
