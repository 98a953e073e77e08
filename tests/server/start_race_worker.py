"""One process of the start race (`test_start_race.py`): on each of many fresh data dirs, at the
same moment as the other processes, either start a server and serve its first calls (every
source, the session, the API keys) or run `knowledge-mcp import`; it reports every traceback
and every warning it logged."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import anyio
from loguru import logger

from knowledge_mcp.server.auth.keys import SqliteKeyStore
from knowledge_mcp.server.cli.commands import run_import
from knowledge_mcp.server.config import Settings
from knowledge_mcp.server.context import DatabasePool, RequestContext
from knowledge_mcp.server.sessions.store import SessionStore

NOTES = Path(__file__).resolve().parents[2] / "fixtures" / "notes"


async def serve_first_calls(data_dir: Path) -> None:
    """What a server's first calls open, through the server's own stores: the API keys (the
    verifier), every source (knowledge_search) and the session (its middleware)."""
    pool = DatabasePool()
    try:
        keys = await SqliteKeyStore.open(data_dir)
        await keys.create("local")  # keys.db created and migrated, racing the others
        await keys.close()
        context = RequestContext.for_user(data_dir, "local")
        for source, path in context.db_paths.items():
            await pool.get(path, source)
        await SessionStore(data_dir, pool).open("local", "s1")
    finally:
        await pool.close()


async def import_notes(data_dir: Path) -> None:
    await run_import(Settings(data_dir=data_dir), "notes", [NOTES], False)


def run(role: str, root: str, rounds: int, barrier: Any, results: Any) -> None:
    """`rounds` fresh data dirs under `root`, each started at the barrier with the others."""
    problems: list[str] = []
    logger.remove()
    logger.add(lambda message: problems.append(str(message)), level="WARNING")
    act = serve_first_calls if role == "serve" else import_notes
    for n in range(rounds):
        barrier.wait()
        try:
            anyio.run(act, Path(root) / f"data-{n}")
        except BaseException:  # the race's outcome: reported, never a worker's crash
            problems.append(f"round {n}: {traceback.format_exc()}")
    results.put((role, problems))
