"""The watcher task of `serve --watch`: file changes in the imported folders, re-imported live.

Three parts run beside the transports on the server's event loop:

- the scan (`folders.scan`) reads, every `RESCAN_S`, which files and folders each watched user
  imported: a folder imported while the server runs is watched from the next scan on (at most
  `RESCAN_S` later), one that disappeared is a warning and is looked for again;
- the streams (`watchfiles.awatch`, inotify/FSEvents/ReadDirectoryChanges in a Rust thread),
  one per watched root, kept running across scans (only new roots start, only roots gone stop),
  turn changes into paths, routed to the targets that own them and folded into a `Pending`;
- the drain re-imports pending paths one target and batch at a time (`reindex`), on a
  connection of its own: reading, hashing and parsing run in a worker thread and each write
  transaction covers one batch, so searches (on the server's own connection, WAL) keep being
  answered and see each batch once it commits.

A newly watched target is first re-imported whole (with prune), so changes made while the
server was not watching converge too. One bad file is logged (its path and the kind of error,
never its content) and the rest go on; any failure of a batch is logged and the watcher goes on.
After each batch the `Change` is published on the server's feed; the store (`stores.py`: the
SQLite files or the PostgreSQL item store, as the backend chose) reads the recorded folders,
writes each batch under the notes writer's lock and tells the embedding worker (new chunks get
vectors). On PostgreSQL only one worker watches (the one holding the embedding lock).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path

import anyio
import anyio.to_thread
from loguru import logger
from watchfiles import awatch

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.storage.naming import shown

from .batching import DEBOUNCE_MS, STEP_MS, Pending, changed_paths
from .events import ChangeFeed
from .folders import Target, route, users_with_data, watched_roots
from .stores import WatchedItems

RESCAN_S = 10.0
"""How often the recorded folders are read again (new imports, folders gone or back)."""
STOP_S = 10.0
THREADS = 40
"""anyio's default thread pool size, kept for everything but the streams."""


class Watcher:
    def __init__(
        self,
        data_dir: Path,
        items: WatchedItems,
        feed: ChangeFeed,
        *,
        users: Sequence[str] | None,
        max_file_bytes: int,
        rescan_s: float = RESCAN_S,
    ) -> None:
        self.data_dir, self.items, self.feed = data_dir, items, feed
        """`items`: where the recorded folders are read and the batches written (`stores.py`)."""
        self.users = users
        """The users watched; None: every user with a data folder (looked up at each scan)."""
        self.max_file_bytes, self.rescan_s = max_file_bytes, rescan_s
        self.targets: list[Target] = []
        self.pending: dict[Target, Pending] = {}
        self._missing: set[Target] = set()
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._streams: dict[tuple[Path, bool], tuple[asyncio.Task[None], asyncio.Event]] = {}
        """The running watchfiles streams by (root, recursive), with the event that stops each."""
        self.batches = 0
        """Batches written so far (tests, the bench)."""

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._scan_loop(), name="watch-scan"),
            loop.create_task(self._drain(), name="watch-drain"),
        ]

    async def stop(self) -> None:
        """Stop watching; the batch being written is finished (cancelled after `STOP_S`)."""
        self._stop.set()
        self._wake.set()
        done, waiting = await asyncio.wait(self._tasks, timeout=STOP_S) if self._tasks else (set(), set())
        for task in waiting:
            task.cancel()
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                logger.warning("the watcher ended on {}", type(task.exception()).__name__)

    def queue(self, target: Target, paths: Sequence[str]) -> None:
        self.pending.setdefault(target, Pending()).add(paths)
        self._wake.set()

    async def _scan_loop(self) -> None:
        """Scan, watch, and every `rescan_s` scan again: streams start for new roots and stop for
        roots gone; the others keep running (no change slips by while a new folder is added)."""
        try:
            while not self._stop.is_set():
                targets = await self._scan()
                if targets != self.targets:
                    self._adopt(targets)
                    self._reconcile(targets)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.rescan_s)
        finally:
            self._reconcile([])
            await asyncio.gather(*(task for task, _ in self._streams.values()), return_exceptions=True)

    async def _scan(self) -> list[Target]:
        users = self.users if self.users is not None else users_with_data(self.data_dir)
        found, gone = await self.items.scan(users)
        for target in sorted(set(gone) - self._missing):
            logger.warning(
                "watch: the {} path {} of user {} is gone; watching the rest",
                target.source, shown(target.root), target.user_id,
            )  # fmt: skip
        self._missing = set(gone)
        return found

    def _adopt(self, targets: list[Target]) -> None:
        """Watch `targets` from now on; each new one is first re-imported whole (what changed
        while it was not watched: before the server started, or while its folder was away)."""
        for target in sorted(set(targets) - set(self.targets)):
            self.queue(target, [str(target.root)])
        self.targets = targets
        logger.info("watching {} imported file(s) and folder(s)", len(targets))

    def _reconcile(self, targets: list[Target]) -> None:
        """One stream per watched root: start the missing ones, stop those no target needs."""
        folders, parents = watched_roots(targets)
        wanted = {(root, True) for root in folders} | {(root, False) for root in parents}
        for key in [key for key in self._streams if key not in wanted]:
            self._streams.pop(key)[1].set()
        # Each stream waits in a thread of anyio's default pool (awatch): grow the pool by as
        # many, so the streams never take the threads the transports read with (stdio).
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = max(limiter.total_tokens, THREADS + len(wanted))
        loop = asyncio.get_running_loop()
        for root, recursive in sorted(wanted - self._streams.keys()):
            stop = asyncio.Event()
            task = loop.create_task(self._stream(root, recursive, stop), name=f"watch-stream-{root}")
            self._streams[(root, recursive)] = (task, stop)

    async def _stream(self, root: Path, recursive: bool, stop: asyncio.Event) -> None:
        try:
            async for changes in awatch(
                root, stop_event=stop, recursive=recursive, debounce=DEBOUNCE_MS, step=STEP_MS
            ):
                for target, paths in route(self.targets, changed_paths(changes)).items():
                    self.queue(target, paths)
        except Exception as exc:  # a folder removed under the stream: the next scan sees it
            logger.warning("watch: a stream stopped ({}); the next scan restarts it", type(exc).__name__)

    async def _drain(self) -> None:
        while not self._stop.is_set():
            await self._wake.wait()
            self._wake.clear()
            while not self._stop.is_set():
                target = next((t for t, p in self.pending.items() if len(p)), None)
                if target is None:
                    break
                await self._apply(target, self.pending[target].take())

    async def _apply(self, target: Target, paths: list[str]) -> None:
        """One batch into the target's source; any failure is logged and the watcher goes on."""
        try:
            summary, change = await self.items.reindex(target, paths, self.max_file_bytes)
        except Exception as exc:  # this batch is lost; a later change or the next start retries
            reason = str(exc) if isinstance(exc, KnowledgeError) else type(exc).__name__
            logger.warning("watch: {} of user {} not re-imported: {}", target.source, target.user_id, reason)
            return
        self.batches += 1
        for failure in summary.failures:
            reason = failure["reason"].split(": ", 1)[0]  # the kind of error, not what it quoted
            logger.warning("watch: {} failed: {}", failure["path"], reason)
        if change:
            logger.info(
                "watch: {} of user {}: {} added, {} updated, {} removed",
                target.source, target.user_id, len(change.added), len(change.updated), len(change.removed),
            )  # fmt: skip
            await self.feed.publish(change)
