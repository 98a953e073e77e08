"""`knowledge-mcp embed` and `import … --embed`: compute the vectors semantic search needs.

Each source's chunks without vectors are embedded in batches, each committed on its own (a
run stopped half-way keeps what it did; the next one continues). Progress goes to stderr.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.search.dense.embedder import embedder, unavailable
from knowledge_mcp.sources.search.dense.indexing import EmbedReport
from knowledge_mcp.sources.storage.db import database_path

from ..backend import opened
from ..config import Settings


class ProgressLine:
    """`embedding notes: 120/500 chunks (24 %)` on stderr: rewritten in place on a terminal,
    else a line at every 10 % (and the last)."""

    def __init__(self, source: str, out: TextIO = sys.stderr) -> None:
        self.source, self.out, self.tty = source, out, out.isatty()
        self.shown = -1
        self.started = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        percent = 100 if not total else done * 100 // total
        if not self.tty and percent // 10 == self.shown // 10 and done < total:
            return
        self.shown = percent
        rate = done / max(1e-9, time.monotonic() - self.started)
        line = f"embedding {self.source}: {done}/{total} chunks ({percent} %, {rate:.1f}/s)"
        print(f"\r{line}" if self.tty else line, end="" if self.tty else "\n", file=self.out, flush=True)

    def close(self) -> None:
        if self.tty and self.shown >= 0:
            print(file=self.out)


async def run_embed(settings: Settings, sources: list[str]) -> dict[str, EmbedReport]:
    """Embed the missing chunks of each source the user has items of."""
    model = embedder()
    if model is None:
        raise KnowledgeError(unavailable() or "no embedding model")
    reports: dict[str, EmbedReport] = {}
    async with opened(settings) as backend:
        for name in sources:
            path = database_path(settings.data_dir, settings.user, name)
            line = ProgressLine(name)
            try:
                report = await backend.items.embed(settings.user, name, path, model, line)
            finally:
                line.close()
            if report is not None:
                reports[name] = report
    return reports


def print_embed_reports(reports: dict[str, EmbedReport]) -> None:
    if not reports:
        print("nothing to embed: no source database yet (import first)")
    for name, r in reports.items():
        print(
            f"{name}: {r.chunks} chunk(s); {r.linked} given vectors this run "
            f"({r.embedded} text(s) embedded, {r.windows} window(s))"
        )
