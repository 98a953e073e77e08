"""notes_create / notes_update against a hostile file system (issue 25): a folder on the way
swapped for a link after it was checked is refused and nothing is written outside; a note's file
swapped for a link after its check is never read or indexed through it; and where the file system
has no hard links, a new note is still never written over a file another writer just created."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.notes.writing import writer
from tests.conftest import call, import_into

pytestmark = pytest.mark.anyio

CANARY = "quokka-canary-7731"


@pytest.fixture
def notes(data_dir: Path) -> Path:
    folder = data_dir / "users" / "local" / "notes"
    (folder / "proj").mkdir(parents=True)
    return folder


async def test_note_creation_refuses_a_folder_swapped_for_a_link_after_it_was_checked(
    notes: Path, tmp_path: Path, client_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    checked = writer.inside

    def inside_then_swapped(root: Path, path: Path) -> bool:
        """The real check; right after it passes, a neighbour swaps `proj` for a link out."""
        verdict = checked(root, path)
        if verdict and not (notes / "proj").is_symlink():
            (notes / "proj").rename(notes.parent / "proj-moved")
            (notes / "proj").symlink_to(outside)
        return verdict

    monkeypatch.setattr(writer, "inside", inside_then_swapped)
    async with client_factory() as client:
        result = await client.call_tool("notes_create", {"title": "t", "content": "c", "folder": "proj/sub"})
    assert result.is_error and "folder: leads out of the notes folder" in result.content[0].text
    assert not list(outside.rglob("*")), "nothing is written through the link"


async def test_a_note_file_swapped_for_a_link_after_its_check_is_never_read_through_it(
    data_dir: Path, tmp_path: Path, client_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    note = vault / "herons.md"
    note.write_text("# Herons\n\nHerons stand still in the shallows.\n", encoding="utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text(f"# Outside\n\nThe private code is {CANARY}.\n", encoding="utf-8")
    await import_into(data_dir, "notes", vault)
    checked = writer.writable_root

    async def root_then_swapped(store: Any, permit: Any, path: Path) -> Path:
        root = await checked(store, permit, path)
        spare = note.with_name(".herons.link")
        spare.symlink_to(outside)
        os.replace(spare, note)
        return root

    monkeypatch.setattr(writer, "writable_root", root_then_swapped)
    async with client_factory() as client:
        hit = (await call(client, "notes_search", query="herons shallows"))["results"][0]
        await client.call_tool("notes_update", {"note_id": hit["uri"], "append": "Seen again."})
        leaked = (await call(client, "notes_search", query=CANARY))["results"]
    assert leaked == [], "the outside file's text reached the index"
    assert outside.read_text(encoding="utf-8").endswith(f"{CANARY}.\n"), "the outside file is unchanged"


async def test_note_creation_without_hard_links_never_replaces_a_file(
    notes: Path, client_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system without hard links (EPERM), and a neighbour that creates the chosen name just
    before any rename onto it: the neighbour's file keeps its text, the note gets its own name."""
    (notes / "Plan.md").write_text("the first plan\n", encoding="utf-8")
    theirs: list[Path] = []
    real_replace = os.replace

    def no_hard_links(src: Any, dst: Any, **kwargs: Any) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    def replace_after_a_neighbour(src: Any, dst: Any, **kwargs: Any) -> None:
        if str(dst).endswith(".md"):
            where = Path(dst) if Path(dst).is_absolute() else notes / str(dst)
            where.write_text("the neighbour's plan\n", encoding="utf-8")
            theirs.append(where)
        real_replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "link", no_hard_links)
    monkeypatch.setattr(os, "replace", replace_after_a_neighbour)
    async with client_factory() as client:
        made = await call(client, "notes_create", title="Plan", content="Water the tomatoes.")
    assert (notes / "Plan.md").read_text(encoding="utf-8") == "the first plan\n"
    assert all(path.read_text(encoding="utf-8") == "the neighbour's plan\n" for path in theirs)
    assert "Water the tomatoes." in (notes / made["path"]).read_text(encoding="utf-8")
