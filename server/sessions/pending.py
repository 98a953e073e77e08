"""A search's session write held until its answer is written (stdio), then done while the client
reads it.

A search's change of its session (the seen URIs, the query, the timeline's event) is a write to
the store that the answer does not depend on. While a transport holds writes (`PendingWrites.held`:
the stdio transport, one process and one client), `StoredSession.record_results` hands the write
here instead of awaiting it; the transport starts every held write once it has written and
flushed an answer (`release`). Every later operation on that session (opening it for the next
call, any change, reset, end, the user's timeline) awaits the session's pending write first
(`settle`), so what it reads is what it would have read had the search awaited its write. A
failed write is logged (its kind only, never content) and kept for the session's next search,
which says in a warning that the earlier results are not marked seen (`take_failure`); the
store's state stays what it holds (the write changes the cache only once it is saved). Leaving
`held` awaits every pending write, so a clean shutdown loses none.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from loguru import logger

from knowledge_mcp.sources.errors import SessionWriteError

Key = tuple[str, str]  # (user_id, session_id), as `state.Key`
Write = Callable[[], Awaitable[object]]


class _Held:
    """One session's write: not started until released (or awaited)."""

    def __init__(self, write: Write) -> None:
        self.write = write
        self.task: asyncio.Task[None] | None = None


class PendingWrites:
    """The session writes a store holds back, by session (at most one each: every operation on
    a session settles its pending write before it reads or changes the session)."""

    def __init__(self) -> None:
        self.holding = False
        self._writes: dict[Key, _Held] = {}
        self._failures: dict[Key, str] = {}

    @asynccontextmanager
    async def held(self) -> AsyncIterator[Callable[[], None]]:
        """Hold searches' writes while in the block; yields the callback that starts them (the
        transport's, after each answer written). Leaving awaits every pending write."""
        self.holding = True
        try:
            yield self.release
        finally:
            self.holding = False
            await self.settle_all()

    def hold(self, key: Key, write: Write) -> bool:
        """Hold `write` of session `key` until released; False when writes are not held (the
        caller awaits it itself)."""
        if not self.holding or key in self._writes:
            return False
        self._writes[key] = _Held(write)
        return True

    def release(self) -> None:
        """Start every held write (an answer was just written)."""
        for key, held in list(self._writes.items()):
            self._start(key, held)

    async def settle(self, key: Key) -> None:
        """Wait for session `key`'s pending write, starting it if it is still held."""
        held = self._writes.get(key)
        if held is None or (held.task is not None and held.task is asyncio.current_task()):
            return
        await asyncio.shield(self._start(key, held))

    async def settle_user(self, user_id: str) -> None:
        """Wait for every pending write of `user_id`'s sessions (before their timeline is read)."""
        for key in [k for k in self._writes if k[0] == user_id]:
            await self.settle(key)

    async def settle_all(self) -> None:
        for key in list(self._writes):
            await self.settle(key)

    def take_failure(self, key: Key) -> str | None:
        """Why session `key`'s last held write failed, once (None: it did not)."""
        return self._failures.pop(key, None)

    def _start(self, key: Key, held: _Held) -> asyncio.Task[None]:
        if held.task is None:
            held.task = asyncio.get_running_loop().create_task(self._run(key, held))
        return held.task

    async def _run(self, key: Key, held: _Held) -> None:
        try:
            await held.write()
        except Exception as exc:  # a background task's boundary: nobody awaits it to hear
            failure = exc if isinstance(exc, SessionWriteError) else SessionWriteError(type(exc).__name__)
            cause = exc.__cause__ if isinstance(exc, SessionWriteError) and exc.__cause__ else exc
            logger.warning("session store: a search's held write failed ({})", type(cause).__name__)
            self._failures[key] = str(failure)
        finally:
            if self._writes.get(key) is held:
                del self._writes[key]
