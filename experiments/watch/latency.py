"""`serve --watch` measured: save → searchable latency, and the watcher's idle CPU.

`python -m experiments.watch.latency [--edits 100] [--idle-s 60] [--notes 200]
[--database-url postgresql://…]`

Latency: a vault of the fixture notes plus `--notes` generated ones is imported by the real CLI,
then the real server runs `serve --watch` over stdio and a real MCP client; each edit appends a
word never seen before to one note (rotating through them), and the client polls notes_search
every 10 ms until that word is found: the time from the write's return to the first search that
finds it. The polling adds up to 10 ms plus one search to each figure.

With `--database-url` the vault is imported into the PostgreSQL item store and the server runs
with `--item-store postgresql` (the URL is passed on the processes' command lines: use a bench
database without a secret password).

Idle CPU: the same server with and without `--watch`, started as a process that is sent no
request, left `--idle-s` seconds after a 5 s settling time; its user + system CPU time read from
/proc/<pid>/stat (Linux) over that window. Background embedding is off unless the environment
sets KNOWLEDGE_MCP_EMBED_IN_BACKGROUND=true (see `server_env`).

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from knowledge_mcp.bench.evaluation import percentile

FIXTURE_VAULT = Path(__file__).resolve().parents[2] / "fixtures" / "notes"
POLL_S = 0.01
BOUND_S = 30.0


def make_vault(root: Path, extra: int) -> Path:
    vault = Path(shutil.copytree(FIXTURE_VAULT, root / "vault"))
    (vault / "generated").mkdir()
    for n in range(extra):
        text = f"# Generated note {n}\n\nA note about topic {n % 17} and item {n}.\n"
        (vault / "generated" / f"note-{n:04}.md").write_text(text, encoding="utf-8")
    return vault


def store_args(url: str | None) -> list[str]:
    """The command-line arguments of the PostgreSQL item store (none: the SQLite files)."""
    return ["--item-store", "postgresql", "--database-url", url] if url else []


def serve_command(data_dir: Path, watch: bool, url: str | None = None) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "knowledge_mcp",
        "serve",
        "--transport",
        "stdio",
        "--data-dir",
        str(data_dir),
        *store_args(url),
    ]
    return [*command, "--watch"] if watch else command


def server_env() -> dict[str, str]:
    """No rate limit, quiet logs, and no background embedding unless the caller's environment
    asks for it (KNOWLEDGE_MCP_EMBED_IN_BACKGROUND=true): with it, the first use of the vault
    embeds every chunk, which is the model's CPU, not the watcher's."""
    env = {**os.environ, "KNOWLEDGE_MCP_RATE_LIMIT_PER_MINUTE": "0", "KNOWLEDGE_MCP_LOG_LEVEL": "WARNING"}
    env.setdefault("KNOWLEDGE_MCP_EMBED_IN_BACKGROUND", "false")
    return env


def import_vault(vault: Path, data_dir: Path, url: str | None = None) -> None:
    command = [
        sys.executable,
        "-m",
        "knowledge_mcp",
        "import",
        "notes",
        str(vault),
        "--data-dir",
        str(data_dir),
        *store_args(url),
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=600)


async def found(client: Client, word: str) -> bool:
    result = await client.call_tool("notes_search", {"query": word, "limit": 1})
    return not result.is_error and bool(result.structured_content and result.structured_content["results"])


async def latencies(vault: Path, data_dir: Path, edits: int, url: str | None = None) -> list[float]:
    notes = sorted((vault / "generated").glob("*.md")) or sorted(vault.rglob("*.md"))
    params = StdioServerParameters(
        command=sys.executable, args=serve_command(data_dir, True, url)[1:], env=server_env()
    )
    times: list[float] = []
    async with Client(params) as client:
        await found(client, "warm")
        await asyncio.sleep(3.0)  # the watcher's first scan and its catch-up of the folder
        for n in range(edits):
            note, word = notes[n % len(notes)], f"zqedit{n:04}x"
            with note.open("a", encoding="utf-8") as file:
                file.write(f"\nEdit {word}.\n")
            saved = time.perf_counter()
            while not await found(client, word):
                if time.perf_counter() - saved > BOUND_S:
                    raise RuntimeError(f"edit {n} not searchable after {BOUND_S} s")
                await asyncio.sleep(POLL_S)
            times.append(time.perf_counter() - saved)
    return times


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def idle_cpu(data_dir: Path, watch: bool, seconds: float, url: str | None = None) -> float:
    """CPU seconds the idle server used over `seconds` (after 5 s to settle)."""
    process = subprocess.Popen(
        serve_command(data_dir, watch, url),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=server_env(),
    )
    try:
        time.sleep(5.0)
        start = cpu_seconds(process.pid)
        time.sleep(seconds)
        return cpu_seconds(process.pid) - start
    finally:
        process.terminate()
        process.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--idle-s", type=float, default=60.0)
    parser.add_argument("--notes", type=int, default=200, help="generated notes besides the fixtures")
    parser.add_argument("--database-url", help="measure the PostgreSQL item store in this database")
    args = parser.parse_args(argv)
    url = args.database_url
    with tempfile.TemporaryDirectory(prefix="watch-bench-") as tmp:
        vault, data_dir = make_vault(Path(tmp), args.notes), Path(tmp) / "data"
        import_vault(vault, data_dir, url)
        times = asyncio.run(latencies(vault, data_dir, args.edits, url))
        report: dict[str, Any] = {
            "item_store": "postgresql" if url else "sqlite",
            "items": sum(1 for _ in vault.rglob("*.md")),
            "edits": len(times),
            "latency_ms": {
                "p50": round(statistics.median(times) * 1000, 1),
                "p95": round(percentile(times, 95) * 1000, 1),
                "max": round(max(times) * 1000, 1),
                "mean": round(statistics.fmean(times) * 1000, 1),
            },
        }
        if args.idle_s > 0:
            watching = idle_cpu(data_dir, True, args.idle_s, url)
            plain = idle_cpu(data_dir, False, args.idle_s, url)
            report["idle_cpu"] = {
                "seconds": args.idle_s,
                "with_watch_s": round(watching, 3),
                "without_watch_s": round(plain, 3),
                "with_watch_percent": round(100 * watching / args.idle_s, 3),
            }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
