"""`knowledge-mcp demo`: import the fixtures into a throw-away data dir and drive the real server.

The server runs as a real subprocess over stdio and is driven by the SDK's client, so what is
printed is exactly what an assistant would see.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult, TextContent
from rich.console import Console
from rich.panel import Panel

from knowledge_mcp.sources.registry import SOURCES

from ..config import Settings
from .commands import run_import

# the checkout's fixtures/ (server/cli/demo.py -> the repository), or in an installed wheel the
# sample data installed as knowledge_mcp/fixtures (knowledge_mcp/server/cli/demo.py -> knowledge_mcp)
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

SEARCHES: dict[str, str] = {
    "notes": "sourdough levain",
    "media": "inverter clipping",
    "chats": "postcode regex",
    "characters": "starship captain",
    "prompts": "code review",
}

console = Console()


def show(title: str, result: CallToolResult) -> None:
    text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
    console.print(Panel(text, title=title, title_align="left", expand=False))


async def run_demo(keep: bool = False) -> int:
    if not FIXTURES.is_dir():
        console.print(f"[red]the demo's sample data is not installed[/red] (looked in {FIXTURES})")
        return 1
    data_dir = Path(tempfile.mkdtemp(prefix="knowledge-mcp-demo-"))
    settings = Settings(data_dir=data_dir)
    try:
        console.rule("[bold]1. import the fixtures")
        for name in SOURCES:
            folder = FIXTURES / name
            if folder.is_dir():
                s = await run_import(settings, name, [folder], prune=False)
                console.print(
                    f"{name:<11} {s.added} items added from {s.files_seen} files, {s.files_failed} failed"
                )
        console.rule("[bold]2. the real server over stdio, driven by the MCP client")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "knowledge_mcp", "serve", "--transport", "stdio", "--data-dir", str(data_dir)],
        )
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            console.print("tools: " + ", ".join(t.name for t in tools))
            console.rule("[bold]3. searches, as the assistant sees them")
            top: dict[str, Any] = {}
            for name, query in SEARCHES.items():
                if name not in SOURCES:
                    continue
                result = await client.call_tool(f"{name}_search", {"query": query, "limit": 3})
                show(f"{name}_search(query={query!r}, limit=3)", result)
                hits = (result.structured_content or {}).get("results", [])
                if hits:
                    top[name] = hits[0]
            console.rule("[bold]4. reading within a budget")
            if "notes" in top:
                hit = top["notes"]
                # a hit names its item by `uri` (DESIGN §5: compact hits); every get accepts it
                args: dict[str, Any] = {
                    "note_id": hit["uri"],
                    "retrieval": {"mode": "chunk_with_siblings", "max_tokens": 250},
                }
                if "loc" in hit:
                    args["loc"] = hit["loc"]
                result = await client.call_tool("notes_get", args)
                show("notes_get(mode=chunk_with_siblings, max_tokens=250)", result)
            bad = await client.call_tool("notes_search", {"query": "bread", "limit": 1000})
            show("a bad call: notes_search(limit=1000)", bad)
        console.print(
            f"[green]demo done[/green]; data dir {'kept at ' + str(data_dir) if keep else 'removed'}"
        )
        return 0
    finally:
        if not keep:
            shutil.rmtree(data_dir, ignore_errors=True)
