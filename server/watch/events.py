"""What the watcher changed, told to whoever listens: a tiny observer list.

After each batch it re-imported for one user and source, the watcher publishes a `Change`
naming the items added, updated and removed (their uris). A listener subscribes with
`feed.subscribe(fn)`; `fn(change)` may be a plain function or a coroutine function, and is
called once per change, in the order the batches were written. This is where the MCP
notifications of a changed knowledge base hook in (`notifications/resources/list_changed` when
`change.list_changed`, `notifications/resources/updated` for each uri of `change.uris`): the
server's one feed is `Services.changes`.

A listener that raises is logged (its exception's type, never the uris or any text) and the
others are still called: a listener cannot stop the watcher.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from loguru import logger


@dataclass(frozen=True)
class Change:
    """One batch's effect on one user's source."""

    user_id: str
    source: str
    added: tuple[str, ...] = ()
    """Uris of items that did not exist before."""
    updated: tuple[str, ...] = ()
    """Uris of items whose content changed (their version went up)."""
    removed: tuple[str, ...] = ()
    """Uris of items that are gone (their file was deleted, renamed or no longer holds them)."""

    @property
    def list_changed(self) -> bool:
        """Whether the set of items changed (items were added or removed), not only their content."""
        return bool(self.added or self.removed)

    @property
    def uris(self) -> tuple[str, ...]:
        """Every uri the batch touched, added, updated and removed."""
        return (*self.added, *self.updated, *self.removed)

    def __bool__(self) -> bool:
        return bool(self.uris)


Listener = Callable[[Change], Awaitable[None] | None]


class ChangeFeed:
    """Listeners of changes: `subscribe`, `publish`."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with every change published from now on; the function returned
        unsubscribes it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    async def publish(self, change: Change) -> None:
        """Tell every listener (an empty change tells none)."""
        if not change:
            return
        for listener in list(self._listeners):
            try:
                result = listener(change)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:  # a listener's failure is its own; the others are told
                logger.warning("a change listener failed: {}", type(exc).__name__)
