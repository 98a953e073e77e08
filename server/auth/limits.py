"""Per-user, per-tool rate limits on `tools/call` (DESIGN §9).

A token bucket per (user, tool): it holds up to the tool's per-minute limit and refills at
limit/60 calls a second, so a client may burst to the limit and then goes at the steady rate.
The user is the authenticated principal (or the local user of stdio), never an argument, so
one user exhausting a tool touches nobody else's buckets and none of their own other tools.

Tools that cost the server alike also share a bucket per user (`groups`): the research tools
(quote checks) and the write tools each have one limit for the group, on top of each tool's.

Memory stays bounded: buckets live in a TTL cache whose TTL is the time a bucket takes to
refill completely (60 s), so a bucket that expired would have been full anyway, and calls
naming a tool the server does not have share one bucket per user rather than one per name.

The server middleware that applies them is `limit_gate.rate_limit` (it loads the MCP SDK; the
backends that only keep buckets do not).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from cachetools import TTLCache

WINDOW_S = 60.0
UNKNOWN_TOOL = "(unknown tool)"
DEFAULT_MAX_BUCKETS = 100_000


def canonical_tool(name: str) -> str:
    """`knowledge.search` (tool_names = "dotted") and `knowledge_search` share one limit."""
    return name.replace(".", "_", 1)


@dataclass
class Bucket:
    tokens: float
    updated: float


class SharedBuckets(Protocol):
    """Buckets kept outside the process (PostgreSQL: `postgres/limits.py`), so several workers
    count against one limit."""

    async def take(self, user: str, tool: str, limit: int) -> float | None: ...

    async def close(self) -> None: ...


class RateLimiter:
    """Token buckets keyed by (user, tool); `take` spends one call or says how long to wait.

    The buckets live in process memory (`acquire`), or in `shared` buckets when given."""

    def __init__(
        self,
        per_minute: int,
        overrides: Mapping[str, int] | None = None,
        *,
        max_buckets: int = DEFAULT_MAX_BUCKETS,
        clock: Callable[[], float] = time.monotonic,
        shared: SharedBuckets | None = None,
        groups: Mapping[str, tuple[Collection[str], int]] | None = None,
    ) -> None:
        self.shared = shared
        self.per_minute = per_minute
        self.overrides = {canonical_tool(k): v for k, v in (overrides or {}).items()}
        self.groups = {
            canonical_tool(tool): (name, limit)
            for name, (tools, limit) in (groups or {}).items()
            if limit > 0
            for tool in tools
        }
        """tool → (its group's name, the group's limit a minute)."""
        self.clock = clock
        self._buckets: TTLCache[tuple[str, str], Bucket] = TTLCache(
            maxsize=max_buckets, ttl=WINDOW_S, timer=clock
        )

    @property
    def enabled(self) -> bool:
        return self.per_minute > 0 or any(v > 0 for v in self.overrides.values()) or bool(self.groups)

    def limit_for(self, tool: str) -> int:
        """Calls a minute allowed for `tool`: its override, else the default; 0 means no limit."""
        return self.overrides.get(tool, self.per_minute)

    async def take(self, user: str, tool: str) -> float | None:
        """Spend one call of `user` on `tool` wherever the buckets are: None when allowed, else
        seconds until the next one."""
        limit = self.limit_for(tool)
        if self.shared is None or limit <= 0:
            return self.acquire(user, tool)
        return await self.shared.take(user, tool, limit)

    async def take_group(self, user: str, tool: str) -> tuple[str, int, float] | None:
        """Spend one call of `user` in `tool`'s group: None when allowed (or it has none), else
        the group, its limit and the seconds until the next call."""
        if tool not in self.groups:
            return None
        group, limit = self.groups[tool]
        key = "group:" + group
        if self.shared is None:
            wait = self.spend(user, key, limit)
        else:
            wait = await self.shared.take(user, key, limit)
        return None if wait is None else (group, limit, wait)

    def acquire(self, user: str, tool: str) -> float | None:
        """Spend one call of `user` on `tool`: None when allowed, else seconds until the next one."""
        return self.spend(user, tool, self.limit_for(tool))

    def spend(self, user: str, tool: str, limit: int) -> float | None:
        """Spend one call from the bucket (user, tool) of `limit` calls a minute (0: no limit)."""
        if limit <= 0:
            return None
        now = self.clock()
        rate = limit / WINDOW_S
        bucket = self._buckets.get((user, tool))
        if bucket is None:
            bucket = Bucket(tokens=float(limit), updated=now)
        else:
            bucket.tokens = min(float(limit), bucket.tokens + (now - bucket.updated) * rate)
            bucket.updated = now
        allowed = bucket.tokens >= 1.0
        if allowed:
            bucket.tokens -= 1.0
        self._buckets[(user, tool)] = bucket  # (re)setting restarts the entry's TTL
        return None if allowed else (1.0 - bucket.tokens) / rate


def limited_message(tool: str, limit: int, wait_s: float) -> str:
    retry = max(1, math.ceil(wait_s))
    return (
        f"rate limit reached for {tool}: {limit} call{'' if limit == 1 else 's'} per minute per user; "
        f"retry in {retry} s "
        "(other tools are not affected)"
    )


def group_limited_message(tool: str, group: str, limit: int, wait_s: float) -> str:
    retry = max(1, math.ceil(wait_s))
    return (
        f"rate limit reached for {tool}: the {group} together allow {limit} call"
        f"{'' if limit == 1 else 's'} per minute per user; retry in {retry} s (other tools are not affected)"
    )
