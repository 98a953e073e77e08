"""Probe 3b, kill -9 during writes: writers call `notes_create` over HTTP, several at once, and
the server is SIGKILLed at a random moment (seeded); N rounds, each on a fresh server over the
same data dir, then one last start. Every note the server acknowledged must be in the database
and on disk, the last start must serve, and every database pass `PRAGMA integrity_check`. A
file written but not yet indexed when the server died is left for the next import of the folder
(`docs/writing.md`); that import is run last, and must index each file once.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
from pathlib import Path
from typing import Any

import anyio

from knowledge_mcp.bench.http import Served, http_client, served

from .imports import import_folder, integrity

WRITERS = 4
USER = "writer"


async def write_until_killed(server: Served, token: str, label: str, kill_after: float) -> set[str]:
    """Titles acknowledged (a result, not an error) before the server was killed."""
    acknowledged: set[str] = set()

    async def writer(index: int) -> None:
        try:
            async with http_client(server.url, token) as client:
                for n in range(10_000):
                    title = f"probe {label} {index} {n}"
                    result = await client.call_tool(
                        "notes_create", {"title": title, "content": f"body of {title}"}
                    )
                    if not result.is_error:
                        acknowledged.add(title)
        except Exception:  # the server went away mid-call: expected, that is the probe
            return

    async with anyio.create_task_group() as tg:
        for index in range(WRITERS):
            tg.start_soon(writer, index)
        await anyio.sleep(kill_after)
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=30)
    return acknowledged


def stored_titles(data_dir: Path) -> tuple[set[str], set[str]]:
    """Titles in the user's notes database, and note files in their notes folder (by stem)."""
    user = data_dir / "users" / USER
    with sqlite3.connect(user / "notes.db") as conn:
        titles = {str(row[0]) for row in conn.execute("SELECT title FROM notes_items")}
    return titles, {path.stem for path in (user / "notes").rglob("*.md")}


async def probe(data_dir: Path, rounds: int, seed: int, tokens: Any) -> dict[str, Any]:
    """`tokens(secret)`: a write-scope JWT for USER on the server holding `secret`."""
    rng = random.Random(seed)
    acknowledged: set[str] = set()
    for round_ in range(rounds):
        async with served(data_dir, auth=True) as server:
            assert server.secret is not None
            moment = rng.uniform(0.3, 2.0)
            acknowledged |= await write_until_killed(server, tokens(server.secret), str(round_), moment)
    async with served(data_dir, auth=True) as server:
        assert server.secret is not None
        async with http_client(server.url, tokens(server.secret)) as client:
            after = await client.call_tool("notes_search", {"query": "probe"})
        serving = not after.is_error
    titles, files = stored_titles(data_dir)
    checks = integrity(data_dir)
    # The documented repair for a file written but not indexed when the server died.
    import_folder("notes", data_dir / "users" / USER / "notes", data_dir, "--user", USER)
    repaired, _ = stored_titles(data_dir)
    with sqlite3.connect(data_dir / "users" / USER / "notes.db") as conn:
        items = int(conn.execute("SELECT count(*) FROM notes_items").fetchone()[0])
    return {
        "rounds": rounds,
        "writers": WRITERS,
        "acknowledged": len(acknowledged),
        "acknowledged_not_in_database": len(acknowledged - titles),
        "acknowledged_without_file": len(acknowledged - files),
        "in_database": len(titles),
        "files": len(files),
        "files_not_in_database": len(files - titles),
        "files_not_in_database_after_reimport": len(files - repaired),
        "items_after_reimport": items,
        "serving_after": serving,
        "integrity_checks": len(checks),
        "integrity_not_ok": {name: result for name, result in checks.items() if result != "ok"},
    }
