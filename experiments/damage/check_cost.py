"""What damage detection costs when a database is opened (issue 29), and what the cache saves.

`python -m experiments.damage.check_cost --size N [--data-dir D]` loads the bench corpus of about
N chunks across the five sources (or reuses the one already in D), then times, per source:
`quick_check` at open on a file never checked (a cold start after an import), the same open
with the clean verdict remembered (a warm start), and the full `integrity_check` (`doctor`).
The OS page cache is warm in every case (the import just wrote the files); a start after a
reboot reads the file from disk first. One JSON object on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from knowledge_mcp.bench.corpus import CorpusStream
from knowledge_mcp.bench.loading import USER, load
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.damage import integrity
from knowledge_mcp.sources.storage.db import database_path, open_database


async def measure(data_dir: Path) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for name, source in SOURCES.items():
        path = database_path(data_dir, USER, name)
        if not path.exists():
            continue
        integrity.record_path(path).unlink(missing_ok=True)
        await asyncio.sleep(integrity.RACY_NS / 1e9)  # the verdict must postdate the last write
        cold = await _timed_open(path, source.migrations)
        warm = await _timed_open(path, source.migrations)
        started = time.perf_counter()
        integrity.integrity_check(path)
        report[name] = {
            "megabytes": round(path.stat().st_size / 1e6, 1),
            "open_checked_ms": cold,
            "open_cached_ms": warm,
            "integrity_check_ms": round((time.perf_counter() - started) * 1000, 1),
        }
    return report


async def _timed_open(path: Path, migrations: Any) -> float:
    started = time.perf_counter()
    db = await open_database(path, migrations)
    elapsed = (time.perf_counter() - started) * 1000
    await db.close()
    return round(elapsed, 1)


async def main(size: int, data_dir: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        where = data_dir or Path(scratch)
        if not database_path(where, USER, "notes").exists():
            await load(CorpusStream(size, 1, None), where)
        return {"size": size, "sources": await measure(where)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000, help="about this many chunks")
    parser.add_argument("--data-dir", type=Path, help="load the corpus here once, reuse it after")
    args = parser.parse_args()
    json.dump(asyncio.run(main(args.size, args.data_dir)), sys.stdout)
    print()
