"""What `resources/read` returns for a large item under each size cap, and how fast.

`python -m experiments.resources.caps [--size-mb 1] [--caps 10000,50000,100000,2000000]
[--reads 10] [--stdio]` writes one note of `--size-mb` megabytes (the fixture vault's field guide to
birds, repeated: real prose and Markdown), imports it, and for each `resource_max_chars` cap
reads it through the real server and an in-memory MCP client (`--stdio`: the server as a
subprocess over stdio, `resource_max_chars` set in its environment): the characters, UTF-8 bytes and
cl100k tokens returned, whether it was cut, the marker line, and the read time (p50 / max of
`--reads` reads after one warm-up). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.notes import source
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.text.tokens import cl100k_tokens

GUIDE = Path(__file__).resolve().parents[2] / "fixtures" / "notes" / "reference" / "huge-field-guide.md"
MARKER = "\n\n[truncated: "


def big_note(folder: Path, size_mb: float) -> Path:
    """One Markdown note of about `size_mb` MB: the field guide's body, repeated."""
    body = GUIDE.read_text(encoding="utf-8").split("\n---\n", 1)[-1]
    target = int(size_mb * 1024 * 1024)
    text = "# A very long field guide\n\n" + (body + "\n\n") * (target // len(body.encode()) + 1)
    path = folder / "long-guide.md"
    path.write_text(text.encode()[:target].decode(errors="ignore"), encoding="utf-8")
    return path


async def timed_reads(client: Client, uri: str, reads: int) -> tuple[str, list[float]]:
    """The text read, and the time of each read after one warm-up (ms)."""
    text, times = "", []
    for _ in range(reads + 1):
        started = time.perf_counter()
        text = (await client.read_resource(uri)).contents[0].text  # type: ignore[union-attr]
        times.append((time.perf_counter() - started) * 1000)
    return text, times[1:]


async def read_under(data_dir: Path, uri: str, cap: int, reads: int, stdio: bool) -> dict[str, Any]:
    if stdio:
        args = ["-m", "knowledge_mcp", "serve", "--transport", "stdio", "--data-dir", str(data_dir)]
        env = {**os.environ, "KNOWLEDGE_MCP_RESOURCE_MAX_CHARS": str(cap)}
        env["KNOWLEDGE_MCP_LOG_LEVEL"] = "WARNING"
        async with Client(StdioServerParameters(command=sys.executable, args=args, env=env)) as client:
            text, times = await timed_reads(client, uri, reads)
    else:
        mcp, host = build_server(Settings(data_dir=data_dir, resource_max_chars=cap))
        try:
            async with Client(mcp) as client:
                text, times = await timed_reads(client, uri, reads)
        finally:
            await host.pool.close()
    head, cut, marker = text.partition(MARKER)
    return {
        "cap_chars": cap,
        "chars": len(text),
        "bytes": len(text.encode()),
        "tokens_cl100k": cl100k_tokens(text),
        "truncated": bool(cut),
        "text_chars": len(head),
        "marker": (cut + marker).strip() or None,
        "read_ms": {"p50": round(statistics.median(times), 1), "max": round(max(times), 1)},
    }


async def measure(size_mb: float, caps: list[int], reads: int, stdio: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder, data_dir = Path(tmp) / "vault", Path(tmp) / "data"
        folder.mkdir()
        path = big_note(folder, size_mb)
        db = await open_database(database_path(data_dir, "local", "notes"), source.migrations)
        try:
            await Importer(source, db).run([folder])
            row = await db.fetchone("SELECT item_id, length(content) FROM notes_items")
        finally:
            await db.close()
        assert row is not None
        uri = f"notes://{row[0]}"
        results = [await read_under(data_dir, uri, cap, reads, stdio) for cap in caps]
        item = {"bytes": path.stat().st_size, "chars": row[1]}
        return {"item": item, "transport": "stdio" if stdio else "memory", "reads": reads, "caps": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=1.0)
    parser.add_argument("--caps", default="10000,50000,100000,2000000")
    parser.add_argument("--reads", type=int, default=10)
    parser.add_argument("--stdio", action="store_true", help="serve over stdio in a subprocess")
    args = parser.parse_args()
    caps = [int(c) for c in args.caps.split(",")]
    report = asyncio.run(measure(args.size_mb, caps, args.reads, args.stdio))
    print(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
