"""verify_quote on 1 MB notes with 5,000-character quotes, and a bystander's search while ten
adversarial quote checks run (issue 25).

    python -m experiments.research.bounded [--corpus corpus.jsonl] [--repeat N] [--json]

Everything goes through real servers over in-memory MCP clients in one process, on a throw-away
data dir: alice has a 1 MB note of SciFact abstracts (real prose), bob the fixture notes. Each
server is its own user, as two HTTP users would be; they share the process's event loop and GIL,
which is what a quote check could hold. Measured:

- verify_quote on alice's note, quotes of 5,000 characters from `--repeat` places: found after
  normalising (case changed, line breaks collapsed), and one word changed (the closest passage
  is then searched);
- bob's knowledge_search, `--repeat` × 3 times one after another: idle, then while alice keeps
  ten adversarial checks (5,000-character quotes with a word changed) running.

Only settings that exist before and after issue 25 are used, so the same file measures any
checkout (`/work/main/.venv/bin/python experiments/research/bounded.py` for the code before).
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

import knowledge_mcp
from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer

ROOT = Path(knowledge_mcp.__file__).resolve().parents[1]  # the checkout measured
CORPUS = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
FIXTURES = ROOT / "fixtures" / "notes"
ITEM_CHARS = 1_000_000
QUOTE_CHARS = 5_000
ADVERSARIES = 10


def long_text(corpus: Path) -> str:
    docs = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    text = "\n\n".join(f"{d['title']}\n{d['text']}" for d in docs)
    return "# SciFact abstracts\n\n" + text[:ITEM_CHARS]


def quotes(text: str, count: int) -> tuple[list[str], list[str]]:
    """`count` quotes of QUOTE_CHARS characters from spread-out places: as found after
    normalising (flattened, first letter's case changed), and with one word changed."""
    found, changed = [], []
    for n in range(count):
        start = text.find(" ", len(text) * (n + 1) // (count + 2)) + 1
        words = text[start : start + QUOTE_CHARS + 200].split()
        quote = " ".join(words)[:QUOTE_CHARS].rsplit(" ", 1)[0]
        found.append(quote[0].swapcase() + quote[1:])
        words = quote.split()
        words[len(words) // 2] = "zebra"
        changed.append(" ".join(words))
    return found, changed


def summary(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    return {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(p95, 1), "n": len(times)}


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await fn()
    return (time.perf_counter() - started) * 1000


async def tool(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    if result.is_error:
        raise RuntimeError(f"{name}: {result.content}")
    return dict(result.structured_content or {})


async def import_notes(data_dir: Path, user: str, folder: Path) -> None:
    source = get_source("notes")
    db = await open_database(database_path(data_dir, user, "notes"), source.migrations)
    try:
        await Importer(source, db).run([folder])
    finally:
        await db.close()


async def bystander(bob: Client, repeat: int) -> list[float]:
    return [
        await timed(lambda: tool(bob, "knowledge_search", query="sourdough starter feeding"))
        for _ in range(repeat)
    ]


async def under_load(alice: Client, bob: Client, uri: str, bad: list[str], repeat: int) -> dict[str, Any]:
    """bob's searches while alice keeps ADVERSARIES checks running; and alice's own times."""
    alice_ms: list[float] = []
    done = anyio.Event()

    async def adversary(n: int) -> None:
        while not done.is_set():
            quote = bad[n % len(bad)]
            alice_ms.append(await timed(functools.partial(tool, alice, "verify_quote", uri=uri, quote=quote)))

    async with anyio.create_task_group() as group:
        for n in range(ADVERSARIES):
            group.start_soon(adversary, n)
        await anyio.sleep(0.2)  # alice's checks are under way
        bob_ms = await bystander(bob, repeat)
        done.set()
        group.cancel_scope.cancel()
    return {"bystander": summary(bob_ms), "adversarial_calls_done": len(alice_ms)}


async def measure(corpus: Path, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir, text = Path(tmp) / "data", long_text(corpus)
        folder = Path(tmp) / "alice"
        folder.mkdir()
        (folder / "abstracts.md").write_text(text, encoding="utf-8")
        await import_notes(data_dir, "alice", folder)
        await import_notes(data_dir, "bob", FIXTURES)
        servers = [
            build_server(Settings(data_dir=data_dir, user=u, rate_limit_per_minute=0))
            for u in ("alice", "bob")
        ]
        found, changed = quotes(text, repeat)
        async with Client(servers[0][0]) as alice, Client(servers[1][0]) as bob:
            uri = (await tool(alice, "notes_search", query="abstracts", limit=1))["results"][0]["uri"]
            figures: dict[str, Any] = {"note_chars": len(text), "quote_chars": QUOTE_CHARS}
            for label, batch in (("found_normalised", found), ("one_word_changed", changed)):
                check = functools.partial(tool, alice, "verify_quote", uri=uri)
                times = [await timed(functools.partial(check, quote=q)) for q in batch]
                figures[f"verify_quote_{label}"] = summary(times)
            await bystander(bob, 2)  # warm
            figures["bystander_idle"] = summary(await bystander(bob, repeat * 3))
            figures["bystander_under_load"] = await under_load(alice, bob, uri, changed, repeat * 3)
        for _, host in servers:
            await host.pool.close()
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = anyio.run(measure, args.corpus, args.repeat)
    if args.json:
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
