"""Hybrid search alone on bench corpora of several sizes (synthetic vectors):

    python -m experiments.dense.hybrid_sizes --sizes 10000 100000

Sizes are in chunks; a source past `ann.MIN_WINDOWS` windows searches its approximate index.
Prints one JSON object a line, one per size.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import anyio

from knowledge_mcp.bench.dense.speed import DENSE_QUERIES, hybrid_search
from knowledge_mcp.bench.phases import USER
from knowledge_mcp.bench.run import BenchOptions, prepare
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.db import database_path, open_database


async def hybrid_at(size: int, seed: int = 1) -> dict[str, Any]:
    """Hybrid search alone over a bench corpus of about `size` chunks (synthetic vectors)."""
    with tempfile.TemporaryDirectory(prefix="knowledge-mcp-hybrid-") as tmp:
        corpus, _, _ = await prepare(BenchOptions(size=size, seed=seed), Path(tmp))
        queries = [q for _, q in corpus.queries]
        spread = queries[:: max(1, len(queries) // DENSE_QUERIES)][:DENSE_QUERIES]
        dbs = {
            name: await open_database(database_path(Path(tmp), USER, name), source.migrations)
            for name, source in SOURCES.items()
        }
        try:
            return {"size": size, **await hybrid_search(spread, dbs)}
        finally:
            for db in dbs.values():
                await db.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.dense.hybrid_sizes")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args(argv)
    for size in args.sizes:
        print(json.dumps(anyio.run(hybrid_at, size)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
