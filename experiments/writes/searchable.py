"""notes_create → searchable latency, on the SQLite files and on the PostgreSQL item store.

`python -m experiments.writes.searchable --database-url postgresql://… [--count 100]
[--notes 1000]`

The fixture vault plus `--notes` generated notes is imported into each store (the runners of
`knowledge-mcp import`), then a real server (`item_store` sqlite or postgresql) and an
in-memory MCP client create `--count` notes, each holding a word never seen before; the time
is from the call to the first notes_search that finds the word (the write indexes the note at
once, so that search is the next one). The first note of each store is a warm-up. Rate limit
off, background embedding off. Prints one JSON object (milliseconds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client

from experiments.watch.latency import make_vault
from knowledge_mcp.bench.evaluation import spread
from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.cli.pg_import import run_pg_import
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.notes import source
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer

BOUND_S = 30.0


async def import_sqlite(data_dir: Path, vault: Path) -> None:
    db = await open_database(database_path(data_dir, "local", "notes"), source.migrations)
    try:
        await Importer(source, db).run([vault])
    finally:
        await db.close()


async def found(client: Client, word: str) -> bool:
    result = await client.call_tool("notes_search", {"query": word, "limit": 1})
    return not result.is_error and bool(result.structured_content and result.structured_content["results"])


async def searchable(settings: Settings, count: int) -> list[float]:
    """Seconds from each notes_create call to the first search finding its note."""
    mcp, host = build_server(settings)
    times: list[float] = []
    try:
        async with Client(mcp) as client:
            for n in range(count + 1):
                word = f"zqnote{n:04}x"
                started = time.perf_counter()
                made = await client.call_tool(
                    "notes_create", {"title": f"Bench note {n}", "content": f"A note holding {word}."}
                )
                if made.is_error:
                    raise RuntimeError(made.content[0].text)  # type: ignore[union-attr]
                while not await found(client, word):
                    if time.perf_counter() - started > BOUND_S:
                        raise RuntimeError(f"note {n} not searchable after {BOUND_S} s")
                times.append(time.perf_counter() - started)
    finally:
        await host.close()
    return times[1:]


async def main(url: str, count: int, notes: int) -> dict[str, Any]:
    report: dict[str, Any] = {"count": count}
    with tempfile.TemporaryDirectory(prefix="writes-bench-") as tmp:
        root = Path(tmp)
        for store in ("sqlite", "postgresql"):
            (root / store).mkdir()
            vault, data_dir = make_vault(root / store, notes), root / store / "data"
            pg = url if store == "postgresql" else None  # SQLite: shared state in files too
            settings = Settings.model_validate(
                {"data_dir": data_dir, "notes_dir": vault, "rate_limit_per_minute": 0}
                | {"embed_in_background": False, "item_store": store, "database_url": pg}
            )
            if store == "sqlite":
                await import_sqlite(data_dir, vault)
            else:
                await run_pg_import(url, settings, "notes", [vault], False)
            report["items"] = sum(1 for _ in vault.rglob("*.md"))
            report[store] = spread([t * 1000 for t in await searchable(settings, count)], 1)
    return report


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True, help="a PostgreSQL database for the item store")
    parser.add_argument("--count", type=int, default=100, help="notes created per store")
    parser.add_argument("--notes", type=int, default=1000, help="generated notes besides the fixtures")
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(main(args.database_url, args.count, args.notes)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())
