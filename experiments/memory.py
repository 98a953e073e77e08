"""What the stdio server process costs in memory (issue 30): `python -m experiments.memory`.

Starts `knowledge-mcp serve` over stdio through the official MCP client on a data dir whose
notes already have their vectors (SciFact as 5,183 notes: `eval --retrieval hybrid --data-dir D`
built one), and reads the server's process tree's resident set from `/proc` (the sum of every
process's VmRSS; a sampler thread keeps the highest sum seen, and each process's VmHWM is its own
peak; `rssanon` is the private memory, `rssfile` the mapped files such as the SQLite database,
which the system can drop). Reported: right after `initialize`, after the searches (BEIR
test queries, `hybrid`, top-100), after an embed run (new notes written through `notes_create`,
embedded by the background worker until every chunk has its vectors) and a few seconds later
(steady). `phase_peaks` is each phase's highest reading (`searches`, `notes_create`, `idle` until the
worker looks again, `embed`, `settle`) and how far into the phase it came. `--smaps` adds the
largest mappings at each point and at each phase's highest reading (the model's arena shows as
anonymous memory, the model file and libraries by path). Linux only (it reads `/proc`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from knowledge_mcp.bench import http as bench_http
from knowledge_mcp.bench.evaluation import read_jsonl, read_qrels

RECHECK_S = 30.0
"""The background worker looks at a database again after this long (`background.RECHECK_S`)."""


def tree(root: int) -> list[int]:
    """`root` and every process below it (from /proc's parent links)."""
    children: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children[parent].append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def status_mb(pid: int, field: str) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def smaps_mb(pid: int, top: int = 12) -> dict[str, float]:
    """The largest mappings of `pid` by resident MB (anonymous ones summed as `[anon]`)."""
    by: dict[str, float] = defaultdict(float)
    name = "[anon]"
    try:
        lines = Path(f"/proc/{pid}/smaps").read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        parts = line.split()
        if parts and "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
            name = parts[5] if len(parts) > 5 else "[anon]"
        elif parts and parts[0] == "Rss:":
            by[name] += int(parts[1]) / 1024
    ranked = sorted(by.items(), key=lambda kv: -kv[1])[:top]
    return {Path(k).name if k.startswith("/") else k: round(v, 1) for k, v in ranked}


class Sampler:
    """The server tree's resident set, read every `every_s` seconds on a thread of its own; with
    `smaps`, the largest mappings at each phase's highest reading (where a peak is)."""

    def __init__(self, root: int, every_s: float = 0.05, *, smaps: bool = False) -> None:
        self.root, self.every_s, self.smaps = root, every_s, smaps
        self.peak = self.since = 0.0
        self.phase = "start"
        self.phases: dict[str, dict[str, Any]] = {}
        """Per phase: its highest reading and when (s after the phase began), its mappings then."""
        self._began = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def rss(self) -> float:
        return sum(status_mb(pid, "VmRSS") for pid in tree(self.root))

    def hwm(self) -> float:
        return sum(status_mb(pid, "VmHWM") for pid in tree(self.root))

    def enter(self, phase: str) -> None:
        """Readings from now on count toward `phase`."""
        self.phase, self._began = phase, time.perf_counter()

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            now = self.rss()
            self.peak, self.since = max(self.peak, now), max(self.since, now)
            top = self.phases.setdefault(self.phase, {"peak_mb": 0.0})
            if now > top["peak_mb"] + (2.0 if self.smaps else 0.0):
                top["peak_mb"], top["at_s"] = round(now, 1), round(time.perf_counter() - self._began, 1)
                if self.smaps:
                    top["smaps"] = smaps_mb(self.root)

    def take_peak(self) -> float:
        """The highest reading since the last call (then it starts again)."""
        since, self.since = max(self.since, self.rss()), 0.0
        return since

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def server_pid(before: set[int]) -> int:
    """The server process the stdio client just started (a new child of this process)."""
    mine = os.getpid()
    new = [pid for pid in tree(mine) if pid != mine and pid not in before]
    if not new:
        raise RuntimeError("the stdio server process was not found under this process")
    return min(new)


def test_queries(beir: Path, count: int) -> list[str]:
    """`count` BEIR queries outside the train qrels (SciFact's test queries), in file order."""
    train = read_qrels(beir / "qrels/train.tsv")
    rows = [q for q in read_jsonl(beir / "queries.jsonl") if str(q["_id"]) not in train]
    return [str(q["text"]) for q in rows[:count]]


def new_notes(beir: Path, count: int) -> list[tuple[str, str]]:
    """`count` texts to write as new notes: corpus abstracts, titled apart from their notes."""
    notes = []
    for doc in read_jsonl(beir / "corpus.jsonl")[-count:]:
        notes.append(
            (f"memory bench {doc['_id']}", f"Re-read: {doc.get('title') or ''}. {doc.get('text') or ''}")
        )
    return notes


def coverage(db: Path) -> tuple[int, int]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM notes_chunks), (SELECT count(*) FROM notes_chunk_vectors)"
        )
        chunks, embedded = row.fetchone()
    return int(chunks), int(embedded)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    env = bench_http.server_env() | {
        "KNOWLEDGE_MCP_USER": args.user,
        "KNOWLEDGE_MCP_EMBED_IN_BACKGROUND": "true",
    }
    env |= dict(setting.split("=", 1) for setting in args.env)
    params = StdioServerParameters(
        command=args.python or sys.executable,
        args=["-m", "knowledge_mcp", "serve", "--transport", "stdio", "--data-dir", str(args.data_dir)],
        env=env,
    )
    db = args.data_dir / "users" / args.user / "notes.db"
    points: dict[str, Any] = {}
    before = set(tree(os.getpid()))
    sampler: Sampler | None = None

    def point(name: str) -> None:
        assert sampler is not None
        pids = tree(sampler.root)
        points[name] = {
            field.lower().replace("vm", "") + "_mb": round(sum(status_mb(pid, field) for pid in pids), 1)
            for field in ("VmRSS", "RssAnon", "RssFile")
        }
        points[name]["peak_since_last_mb"] = round(sampler.take_peak(), 1)
        if args.smaps:
            points[name]["smaps"] = smaps_mb(sampler.root)

    async with Client(params) as client:
        # The client has sent `initialize`: the process is there, its start is what it held then.
        sampler = Sampler(server_pid(before), smaps=args.smaps)
        point("after_initialize")
        queries = test_queries(args.beir, args.queries)
        sampler.enter("searches")
        t0 = time.perf_counter()
        errors = 0
        for q in queries:
            result = await client.call_tool(
                "knowledge_search", {"query": q, "limit": 100, "mode": "hybrid", "seen": "show"}
            )
            errors += bool(result.is_error)
        search_s = time.perf_counter() - t0
        point("after_searches")
        sampler.enter("notes_create")
        for title, body in new_notes(args.beir, args.embed_notes):
            await client.call_tool("notes_create", {"title": title, "content": body})
        sampler.enter("idle")
        await asyncio.sleep(RECHECK_S + 1)  # the worker looks again at a database used after this
        sampler.enter("embed")
        await client.call_tool("knowledge_search", {"query": "memory bench", "limit": 10, "seen": "show"})
        t1 = time.perf_counter()
        while (cover := coverage(db))[1] < cover[0] and time.perf_counter() - t1 < args.embed_timeout:
            await asyncio.sleep(0.5)
        embed_s = time.perf_counter() - t1
        point("after_embed")
        sampler.enter("settle")
        await client.call_tool(
            "knowledge_search", {"query": queries[0], "limit": 100, "mode": "hybrid", "seen": "show"}
        )
        await asyncio.sleep(args.settle)
        point("steady")
        points["peak_hwm_mb"] = round(sampler.hwm(), 1)
        sampler.stop()
    return {
        "data_dir": str(args.data_dir),
        "queries": len(queries),
        "search_errors": errors,
        "search_s": round(search_s, 1),
        "embed_notes": args.embed_notes,
        "embed_s": round(embed_s, 1),
        "coverage_after_embed": list(cover),
        "peak_sampled_mb": round(sampler.peak, 1),
        **points,
        "phase_peaks": sampler.phases,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir", type=Path, required=True, help="a COPY of a data dir with notes and vectors"
    )
    parser.add_argument(
        "--beir", type=Path, default=Path("/work/shared/data/scifact"), help="the BEIR dataset"
    )
    parser.add_argument("--user", default="eval", help="the data dir's user folder (eval's: eval)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--embed-notes", type=int, default=100, help="new notes the background worker embeds")
    parser.add_argument("--embed-timeout", type=float, default=600.0)
    parser.add_argument("--settle", type=float, default=5.0, help="seconds idle before the steady reading")
    parser.add_argument("--python", help="the server's interpreter (another checkout's venv: a before/after)")
    parser.add_argument(
        "--env", action="append", default=[], metavar="KNOWLEDGE_MCP_NAME=VALUE", help="a server setting"
    )
    parser.add_argument("--smaps", action="store_true", help="the largest mappings at each point")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args)), indent=2))


if __name__ == "__main__":
    main()
