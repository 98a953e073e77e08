"""A large source's approximate index as searches see it: the last one synced, while the next
sync runs in a worker thread (`store.sync`).

Searches never wait for a sync: they use the index as it was (a few texts behind at most; an
item gone since is dropped when the page is read from SQL), while the sync changes a copy of it
(memory for two indexes meanwhile) that replaces it when done. Only a source's very first sync,
when no saved file can be read, leaves it without an index: its searches are lexical until it
ends (the retriever says so). One sync at a time per source; a change seen meanwhile starts
another when it ends.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from loguru import logger

from . import store
from .store import AnnIndex


class ApproximateIndex:
    def __init__(self, db_path: Path, table: str, threads: int = 1) -> None:
        self.db_path = db_path
        self.table = table
        self.threads = threads
        self.ready: AnnIndex | None = None
        self.wanted: tuple[Any, ...] | None = None
        self._task: asyncio.Task[None] | None = None
        self._again = False
        """A change was seen during the sync under way: sync again when it ends."""

    @property
    def stamp(self) -> tuple[Any, ...] | None:
        """The vectors' stamp (`vectors.stamp`) the usable index matches."""
        return self.ready.layout.stamp if self.ready is not None else None

    def usable(self) -> AnnIndex | None:
        return self.ready

    def follow(self, stamp: tuple[Any, ...]) -> None:
        """The database's vectors are now at `stamp`: sync to them unless already there."""
        self.wanted = stamp
        if self._task is not None:
            self._again = True
        elif stamp != self.stamp:
            self._task = asyncio.get_running_loop().create_task(self._sync())

    async def wait(self) -> AnnIndex | None:
        """The index once the syncs under way have ended (for tests and benches)."""
        while self._task is not None:
            await asyncio.shield(self._task)
        return self.ready

    async def _sync(self) -> None:
        try:
            while True:
                self._again = False
                # A copy: usearch may reallocate while it adds, under a search of the old one.
                held = self.ready.index.copy() if self.ready is not None else None
                self.ready = await asyncio.to_thread(store.sync, self.db_path, self.table, held, self.threads)
                if not self._again or self.wanted == self.stamp:
                    break
        except Exception as error:  # searches stay as they were (exact pass or lexical)
            logger.warning("approximate index of {} not synced: {}", self.table, type(error).__name__)
        finally:
            self._task = None
