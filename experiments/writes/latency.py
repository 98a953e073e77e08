"""Write latency of notes_create / notes_update, with and without the duplicate check, and the
similarity the check gives a re-saved and a lightly edited note.

`python -m experiments.writes.latency [--corpus corpus.jsonl] [--count N] [--dense]`
imports a vault (the fixture notes, or a BEIR corpus as one note per document), then through the
real server and an in-memory MCP client creates N notes (each a lightly edited copy of an
existing note, so the check has real look-alikes) and updates each once (append, with
`expected_version`). Every call is timed; the first of each kind is a warm-up. `--dense` embeds
the vault first, so the check compares embeddings. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client

from experiments.scifact_notes import write_notes
from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.cli.embedding import run_embed
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.notes import source
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.text.frontmatter import split_front_matter

FIXTURE_VAULT = Path(__file__).resolve().parents[2] / "fixtures" / "notes"
FILLERS = ("really", "also", "perhaps", "mostly", "often")


def edited(text: str, fraction: float, rng: random.Random) -> str:
    """`text` with `fraction` of its words replaced."""
    words = text.split(" ")
    for at in rng.sample(range(len(words)), max(1, int(len(words) * fraction))):
        words[at] = rng.choice(FILLERS)
    return " ".join(words)


def quantiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 1), "p95": round(p95, 1), "n": len(ordered)}


async def timed(client: Client, tool: str, args: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    result = await client.call_tool(tool, args)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise RuntimeError(f"{tool}: {getattr(result.content[0], 'text', result.content[0])}")
    return elapsed, dict(result.structured_content or {})


async def run_writes(
    data_dir: Path, bodies: list[tuple[str, str]], count: int, check_ms: int
) -> dict[str, Any]:
    mcp, host = build_server(
        Settings(
            data_dir=data_dir, duplicate_check_ms=check_ms, embed_in_background=False, rate_limit_per_minute=0
        )
    )
    rng = random.Random(check_ms)
    creates: list[float] = []
    updates: list[float] = []
    verdicts: dict[str, int] = {}
    try:
        async with Client(mcp) as client:
            made = []
            for n in range(count + 1):
                title, body = rng.choice(bodies)
                ms, note = await timed(
                    client, "notes_create", {"title": f"{title} {n}", "content": edited(body, 0.05, rng)}
                )
                creates += [ms] if n else []
                made.append(note)
                key = note.get("recommendation") or ("similar" if note.get("duplicates") else "none")
                verdicts[key] = verdicts.get(key, 0) + 1
            for n, note in enumerate(made):
                args = {
                    "note_id": note["uri"],
                    "append": f"Follow-up {n}.",
                    "expected_version": note["version"],
                }
                ms, _ = await timed(client, "notes_update", args)
                updates += [ms] if n else []
            provider = made[-1].get("provider")
    finally:
        await host.pool.close()
    return {
        "create_ms": quantiles(creates),
        "update_ms": quantiles(updates),
        "provider": provider,
        "verdicts": verdicts,
    }


async def similarities(data_dir: Path, bodies: list[tuple[str, str]]) -> dict[str, Any]:
    """What the check says of a note saved again unchanged, and with 5 % / 15 % of its words changed."""
    mcp, host = build_server(
        Settings(
            data_dir=data_dir, duplicate_check_ms=10_000, embed_in_background=False, rate_limit_per_minute=0
        )
    )
    rng = random.Random(1)
    found: dict[str, list[float]] = {"identical": [], "edited_5pct": [], "edited_15pct": []}
    try:
        async with Client(mcp) as client:
            for title, body in rng.sample(bodies, min(10, len(bodies))):
                for key, text in (
                    ("identical", body),
                    ("edited_5pct", edited(body, 0.05, rng)),
                    ("edited_15pct", edited(body, 0.15, rng)),
                ):
                    _, note = await timed(client, "notes_create", {"title": title, "content": text})
                    # the copy's only look-alike is the note it was made from (earlier copies are
                    # emptied below); none listed: under 0.50
                    top = [d["similarity"] for d in note.get("duplicates", [])]
                    found[key].append(max(top, default=0.0))
                    await timed(client, "notes_update", {"note_id": note["uri"], "content": "(removed)"})
    finally:
        await host.pool.close()
    return {key: {"min": min(v), "median": statistics.median(v), "max": max(v)} for key, v in found.items()}


async def main(corpus: Path | None, count: int, dense: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        vault, data_dir = Path(tmp) / "vault", Path(tmp) / "data"
        if corpus is not None:
            write_notes(corpus, vault)
        else:
            shutil.copytree(FIXTURE_VAULT, vault)
        db = await open_database(database_path(data_dir, "local", "notes"), source.migrations)
        try:
            summary = await Importer(source, db).run([vault])
        finally:
            await db.close()
        if dense:
            await run_embed(Settings(data_dir=data_dir), ["notes"])
        bodies = []
        for path in sorted(vault.rglob("*.md")):
            front, body = split_front_matter(path.read_text(encoding="utf-8"))
            if len(body.split()) >= 40 and not any(
                part.startswith(".") for part in path.relative_to(vault).parts
            ):
                bodies.append((str(front.get("title") or path.stem), body.strip()))
        report: dict[str, Any] = {
            "vault": str(corpus or "fixtures/notes"),
            "notes": summary.added,
            "dense": dense,
        }
        report["similarity"] = await similarities(data_dir, bodies)
        report["with_check"] = await run_writes(data_dir, bodies, count, 750)
        report["without_check"] = await run_writes(data_dir, bodies, count, 0)
        return report


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="a BEIR corpus.jsonl (default: the fixture vault)")
    parser.add_argument("--count", type=int, default=40, help="notes created and updated per run")
    parser.add_argument("--dense", action="store_true", help="embed the vault first (needs the model)")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.corpus, args.count, args.dense)), indent=1))


if __name__ == "__main__":
    cli()
