"""Quote checks run on the event loop in small steps, a few at a time, each within a deadline.

A check (`sources/text/quotes.check`) is a generator that yields between slices of work of
about a millisecond. `QuoteWork.run` drives it on the event loop, pausing at every yield, so a
check never blocks the loop or holds the GIL for long and other users' calls go on between its
steps; at most `CONCURRENT` checks run at once (the rest wait their turn, inside their own
deadline), and a check still running at its call's deadline stops with `QuoteTooLong`: the
tool then answers "not verified: too long" instead of blocking.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import TypeVar, cast

import anyio

T = TypeVar("T")
CONCURRENT = 2
"""Checks running at once in a process (one per core of a small server)."""


class QuoteTooLong(Exception):
    """The check ran past its call's deadline."""


class QuoteWork:
    def __init__(self, budget_s: float, concurrent: int = CONCURRENT) -> None:
        self.budget_s = budget_s
        self.concurrent = concurrent
        self._limiter: anyio.CapacityLimiter | None = None

    def deadline(self) -> float:
        """The deadline of a call starting now (`time.monotonic()` seconds)."""
        return time.monotonic() + self.budget_s

    async def run(self, steps: Generator[None, None, T], deadline: float) -> T:
        """Drive `steps` to its result, pausing between steps; QuoteTooLong past `deadline`."""
        if self._limiter is None:  # made on the running loop, the first time it is needed
            self._limiter = anyio.CapacityLimiter(self.concurrent)
        with anyio.move_on_after(max(0.0, deadline - time.monotonic())):
            async with self._limiter:
                while True:
                    try:
                        next(steps)
                    except StopIteration as done:
                        return cast(T, done.value)
                    if time.monotonic() > deadline:
                        break
                    await anyio.sleep(0)
        steps.close()
        raise QuoteTooLong
