"""`serve --watch`: live re-indexing of the folders each user imported (see `watcher`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .events import Change, ChangeFeed
from .watcher import Watcher

if TYPE_CHECKING:
    from ..app import Services

__all__ = ["Change", "ChangeFeed", "Watcher", "start_watching"]


def start_watching(host: Services, *, every_user: bool) -> Watcher | None:
    """Start the watcher on the running loop when the `watch` setting is on (None when off).

    `every_user`: authenticated HTTP, where every user with a data folder is served and watched;
    else (stdio, `--no-auth`) only the one local user `settings.user`."""
    settings = host.settings
    if not settings.watch:
        return None
    watcher = Watcher(
        settings.data_dir,
        host.backend.items.watched(),
        host.changes,
        users=None if every_user else [settings.user],
        max_file_bytes=int(settings.import_max_file_mb * 1024 * 1024),
    )
    watcher.start()
    return watcher
