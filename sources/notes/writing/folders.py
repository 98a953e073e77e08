"""Which folder a caller's new notes go into, and which files their updates may change.

The local user (stdio) writes into the configured `notes_dir`, else the folder their notes
were last imported from (recorded by every import: `notes_folders`, or PostgreSQL's
`pg_folders`), else `users/<id>/notes` under the data dir. Any other user (over HTTP, with a
write credential) writes only into `users/<id>/notes`. An update may change a note's file only
inside the caller's notes folder, or, for the local user, inside a folder (or the very file)
they imported.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import InvalidArgumentError
from .models import WritePermit
from .paths import inside
from .stores import NoteStore


async def notes_folder(store: NoteStore, permit: WritePermit) -> Path:
    """The caller's notes folder (created when missing), resolved."""
    folder = permit.home / "notes"
    if permit.local and permit.notes_dir is not None:
        folder = permit.notes_dir.expanduser()
    elif permit.local:
        folder = next(
            (path for path, is_folder in await store.imported() if is_folder and path.is_dir()), folder
        )
    folder.mkdir(parents=True, exist_ok=True)
    return folder.resolve()


async def writable_root(store: NoteStore, permit: WritePermit, path: Path) -> Path:
    """The folder (the notes folder, or an imported one) that holds the file `path`, which an
    update may change; an error when the note's file lies elsewhere or is gone."""
    roots = [await notes_folder(store, permit)]
    if permit.local:
        roots += [
            p if is_folder else p.parent for p, is_folder in await store.imported() if is_folder or p == path
        ]
    if not path.is_file():
        raise InvalidArgumentError("note_id", "the note's file is gone; import its folder again")
    for root in roots:
        if inside(root, path):
            return root.resolve()
    raise InvalidArgumentError("note_id", "that note's file is outside the folders you may write to")
