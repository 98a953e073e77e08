"""Bursts of file events folded into batches of work (pure).

watchfiles already groups the events of a burst (it yields once nothing has happened for
`STEP_MS`, or after `DEBOUNCE_MS` of steady changes). While a batch is being re-imported, the
next events wait in a `Pending`: a path touched ten times is re-imported once, and a burst of
200 files arrives as one or a few batches. What happened to a path in between does not matter:
the re-import looks at the file as it is when its batch runs (there: re-imported; gone: its
items removed), so the folding only keeps each path once and remembers whether its directory
vanished as a whole (a folder renamed or deleted: the items of every file under it go).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePath

DEBOUNCE_MS = 1600
"""The longest watchfiles groups a steady stream of changes before yielding them."""
STEP_MS = 50
"""How long watchfiles waits for a quiet moment before yielding a burst."""
MAX_BATCH = 500
"""The most paths one batch re-imports (a larger burst is taken in several batches, so each
batch's write transaction stays short)."""


@dataclass
class Pending:
    """Paths changed since the last batch, in the order first seen, each once."""

    paths: dict[str, None] = field(default_factory=dict)

    def add(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.paths.pop(path, None)  # seen again: it moves to the end, after what it follows
            self.paths[path] = None

    def take(self, limit: int = MAX_BATCH) -> list[str]:
        """The next batch: at most `limit` paths, removed from the pending ones."""
        batch = list(self.paths)[:limit]
        for path in batch:
            del self.paths[path]
        return batch

    def __len__(self) -> int:
        return len(self.paths)


def changed_paths(changes: Iterable[tuple[object, str]]) -> list[str]:
    """The paths of a watchfiles burst (its `(Change, path)` pairs), each once, in sorted order:
    added, modified and deleted alike (the batch looks at each path as it is when it runs)."""
    return sorted({path for _, path in changes})


def outermost(paths: Iterable[str]) -> list[str]:
    """The paths not under another one of them (a folder gone takes its files with it), sorted."""
    kept: list[PurePath] = []
    for path in sorted({PurePath(p) for p in paths}, key=lambda p: p.parts):
        if not any(path == k or k in path.parents for k in kept):
            kept.append(path)
    return [str(p) for p in kept]
