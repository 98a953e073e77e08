"""Probe 4, concurrent sessions: N streamable-HTTP client sessions at once, each its own
connection and JWT, each doing `notes_search` then `notes_get` of its top hit. A session
fails when it cannot connect, a call raises or times out, or a call answers a tool error.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from knowledge_mcp.bench.http import Served, http_client

SESSION_TIMEOUT_S = 120.0


def queries(folder: Path, count: int = 20) -> list[str]:
    """Two words of each of the first `count` notes' titles: every query has a hit."""
    found = []
    for path in sorted(folder.glob("*.md"))[:count]:
        line = next(x for x in path.read_text(encoding="utf-8").splitlines() if x.startswith("title:"))
        words = [w for w in json.loads(line.removeprefix("title:")).split() if w.isalpha()]
        found.append(" ".join(words[:2]) or "protein")
    return found


async def one_session(url: str, token: str, query: str) -> str | None:
    """None when the session searched and read; else why it failed."""
    async with http_client(url, token) as client:
        found = await client.call_tool("notes_search", {"query": query, "limit": 3})
        if found.is_error:
            return "search tool error"
        hits = (found.structured_content or {}).get("results") or []
        if not hits:
            return "no hits"
        note_id = str(hits[0]["uri"]).split("://", 1)[1]
        got = await client.call_tool(
            "notes_get", {"note_id": note_id, "retrieval": {"mode": "chunk", "max_tokens": 200}}
        )
        return "get tool error" if got.is_error else None


async def concurrent(server: Served, tokens: list[str], asked: list[str]) -> dict[str, Any]:
    failures: Counter[str] = Counter()
    done = 0

    async def run(index: int, token: str) -> None:
        nonlocal done
        try:
            with anyio.fail_after(SESSION_TIMEOUT_S):
                why = await one_session(server.url, token, asked[index % len(asked)])
        except Exception as exc:  # counted: the figure is how many fail
            why = type(exc).__name__
        if why is None:
            done += 1
        else:
            failures[why] += 1

    async with anyio.create_task_group() as tg:
        for index, token in enumerate(tokens):
            tg.start_soon(run, index, token)
    return {
        "sessions": len(tokens),
        "succeeded": done,
        "failed": sum(failures.values()),
        "failures": dict(failures),
        "server_alive": server.process.poll() is None,
    }
