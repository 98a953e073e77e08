"""The folding of file events into batches, and the routing of paths to targets (pure)."""

from __future__ import annotations

from pathlib import Path, PurePath

import pytest

from knowledge_mcp.server.watch.batching import Pending, changed_paths, outermost
from knowledge_mcp.server.watch.folders import Target, route, watched_roots
from knowledge_mcp.server.watch.reindex import diff

VAULT = Target("ann", "notes", Path("/v"), True)
MAIL = Target("ann", "media", Path("/m/inbox.mbox"), False)
BOBS = Target("bob", "notes", Path("/v"), True)


@pytest.mark.parametrize(
    ("bursts", "limit", "batches"),
    [
        ([["/v/a.md"]], 10, [["/v/a.md"]]),
        ([["/v/a.md", "/v/b.md"], ["/v/a.md"]], 10, [["/v/b.md", "/v/a.md"]]),  # touched again: once, later
        ([["/v/a.md"]] * 5, 10, [["/v/a.md"]]),
        (
            [[f"/v/{n}.md" for n in range(5)]],
            2,
            [["/v/0.md", "/v/1.md"], ["/v/2.md", "/v/3.md"], ["/v/4.md"]],
        ),
        ([], 10, []),
    ],
)
def test_pending_paths_come_out_once_each_in_batches_of_the_limit(
    bursts: list[list[str]], limit: int, batches: list[list[str]]
) -> None:
    pending = Pending()
    for burst in bursts:
        pending.add(burst)
    taken = []
    while len(pending):
        taken.append(pending.take(limit))
    assert taken == batches


@pytest.mark.parametrize(
    ("changes", "paths"),
    [
        ([(1, "/v/b.md"), (2, "/v/a.md"), (3, "/v/b.md")], ["/v/a.md", "/v/b.md"]),
        ([(3, "/v/gone.md")], ["/v/gone.md"]),
        ([], []),
    ],
)
def test_a_burst_is_its_paths_each_once_in_order(changes: list[tuple[int, str]], paths: list[str]) -> None:
    assert changed_paths(changes) == paths


@pytest.mark.parametrize(
    ("paths", "kept"),
    [
        (["/v/a", "/v/a/b.md", "/v/a/c/d.md"], ["/v/a"]),
        (["/v/ab.md", "/v/a"], ["/v/a", "/v/ab.md"]),  # a sibling with a common prefix stays
        (["/v/x.md", "/v/y.md"], ["/v/x.md", "/v/y.md"]),
        ([], []),
    ],
)
def test_a_folder_gone_stands_for_every_path_under_it(paths: list[str], kept: list[str]) -> None:
    assert outermost(paths) == kept


@pytest.mark.parametrize(
    ("target", "path", "owns"),
    [
        (VAULT, "/v/a.md", True),
        (VAULT, "/v/deep/er/a.md", True),
        (VAULT, "/v", True),
        (VAULT, "/v/.obsidian/workspace.json", False),  # hidden: the import leaves it out
        (VAULT, "/v/.trash/old.md", False),
        (VAULT, "/vault/a.md", False),  # a prefix of the name is not the folder
        (VAULT, "/a.md", False),
        (MAIL, "/m/inbox.mbox", True),
        (MAIL, "/m/other.mbox", False),  # a recorded file: only itself, not its siblings
    ],
)
def test_a_change_belongs_to_the_recorded_file_or_to_a_visible_path_in_the_folder(
    target: Target, path: str, owns: bool
) -> None:
    assert target.owns(PurePath(path)) is owns


def test_a_folder_two_users_imported_is_re_imported_for_each_of_them() -> None:
    routed = route([VAULT, MAIL, BOBS], ["/v/a.md", "/m/inbox.mbox", "/elsewhere/x.md"])
    assert routed == {VAULT: ["/v/a.md"], BOBS: ["/v/a.md"], MAIL: ["/m/inbox.mbox"]}


def test_folders_are_watched_recursively_and_recorded_files_through_their_folder() -> None:
    assert watched_roots([VAULT, MAIL, BOBS]) == ([Path("/v")], [Path("/m")])


@pytest.mark.parametrize(
    ("before", "after", "added", "updated", "removed"),
    [
        ({}, {"a": 1}, ("notes://a",), (), ()),
        ({"a": 1}, {"a": 2}, (), ("notes://a",), ()),
        ({"a": 1}, {"a": 1}, (), (), ()),
        ({"a": 1, "b": 3}, {"c": 1}, ("notes://c",), (), ("notes://a", "notes://b")),
    ],
)
def test_the_change_of_a_batch_names_items_added_updated_and_removed(
    before: dict[str, int],
    after: dict[str, int],
    added: tuple[str, ...],
    updated: tuple[str, ...],
    removed: tuple[str, ...],
) -> None:
    change = diff(VAULT, "notes", before, after)
    assert (change.added, change.updated, change.removed) == (added, updated, removed)
    assert change.user_id == "ann" and change.list_changed is bool(added or removed)
