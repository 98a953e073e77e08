"""Quote checks run on the event loop in small steps, a few at a time, each within a deadline.

A check (`sources/text/quotes.check`) is a generator that yields between slices of work of a
fraction of a millisecond. `QuoteWork.run` drives it on the event loop, pausing at every yield,
so a check never blocks the loop and other users' calls go on between its steps; at most
`CONCURRENT` checks run at once (the rest wait their turn, inside their own deadline), and a
check still running at its call's deadline stops with `QuoteTooLong`: the tool then answers
"not verified: too long" instead of blocking.

While other requests are in flight (`in_flight`, counted by the `counting` middleware), the
checks of a process also rest together: after `WORK_S` of their steps none runs for `REST_S`.
A loop that is never idle keeps the GIL, and the threads that run other calls' SQLite queries
then wait the interpreter's switch interval (5 ms) for it at every query; while the checks rest
the loop waits on I/O and those threads go on at once. Alone, a check runs without resting.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar, cast

import anyio

T = TypeVar("T")
CONCURRENT = 2
"""Checks running at once in a process (one per core of a small server)."""
WORK_S = 0.002
REST_S = 0.001


class QuoteTooLong(Exception):
    """The check ran past its call's deadline."""


class QuoteWork:
    def __init__(self, budget_s: float, concurrent: int = CONCURRENT) -> None:
        self.budget_s = budget_s
        self.concurrent = concurrent
        self._limiter: anyio.CapacityLimiter | None = None
        self._worked = 0.0
        self._rest_until = 0.0
        self.in_flight = 0
        """Requests the server is answering (quote checks' own included)."""
        self._checks = 0

    def deadline(self) -> float:
        """The deadline of a call starting now (`time.monotonic()` seconds)."""
        return time.monotonic() + self.budget_s

    async def run(self, steps: Generator[None, None, T], deadline: float) -> T:
        """Drive `steps` to its result, pausing between steps; QuoteTooLong past `deadline`."""
        if self._limiter is None:  # made on the running loop, the first time it is needed
            self._limiter = anyio.CapacityLimiter(self.concurrent)
        self._checks += 1
        try:
            return await self._drive(steps, deadline)
        finally:
            self._checks -= 1

    async def counting(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        """Server middleware: keep `in_flight`."""
        self.in_flight += 1
        try:
            return await call_next(ctx)
        finally:
            self.in_flight -= 1

    async def _drive(self, steps: Generator[None, None, T], deadline: float) -> T:
        assert self._limiter is not None
        with anyio.move_on_after(max(0.0, deadline - time.monotonic())):
            async with self._limiter:
                while True:
                    await self._pace()
                    started = time.monotonic()
                    try:
                        next(steps)
                    except StopIteration as done:
                        return cast(T, done.value)
                    finally:
                        self._spent(time.monotonic() - started)
                    if time.monotonic() > deadline:
                        break
        steps.close()
        raise QuoteTooLong

    async def _pace(self) -> None:
        """Let the loop run other tasks, and rest while the checks' rest lasts."""
        resting = self._rest_until - time.monotonic()
        await anyio.sleep(max(0.0, resting))

    def _spent(self, seconds: float) -> None:
        self._worked += seconds
        if self._worked >= WORK_S and self.in_flight > self._checks:  # someone else is waiting
            self._worked = 0.0
            self._rest_until = time.monotonic() + REST_S
