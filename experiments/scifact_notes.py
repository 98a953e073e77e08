"""A real notes folder from a BEIR corpus, and the raw FTS5 baseline to compare an import with.

`python -m experiments.scifact_notes CORPUS.jsonl OUT_DIR` writes one Markdown note per
document (`<_id>.md`: front matter title, the abstract as body), for timing
`knowledge-mcp import notes OUT_DIR`. With `--fts5 DB` it instead inserts the same documents
straight into a bare FTS5 table (same tokenizer, one transaction) and prints documents per
second: the floor no importer can beat.

`--compare DATA_DIR` times both in one run (issue 28, Build 5): `--repeat` rounds (default 3),
each the raw FTS5 inserts and then `knowledge-mcp import notes OUT_DIR --data-dir DATA_DIR`
into an emptied DATA_DIR, wall clock of the whole command (its start-up included; vectors are
not computed: `import` leaves them to the server's background embedder, as the product does).
It prints one JSON object: per command each round's wall and CPU seconds, docs/s and the median
ratios raw FTS5 / command, `--before PYTHON` adds another clone's import (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from knowledge_mcp.sources.storage.schema import TOKENIZER


def documents(corpus: Path) -> Iterator[tuple[str, str, str]]:
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            yield str(doc["_id"]), str(doc.get("title") or ""), str(doc.get("text") or "")


def note_text(title: str, text: str) -> str:
    quoted = json.dumps(title, ensure_ascii=False)  # a JSON string is a valid YAML scalar
    return f"---\ntitle: {quoted}\n---\n\n{text}\n"


def write_notes(corpus: Path, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for doc_id, title, text in documents(corpus):
        (out / f"{doc_id}.md").write_text(note_text(title, text), encoding="utf-8")
        count += 1
    return count


def raw_fts5(corpus: Path, db: Path) -> tuple[int, float]:
    """Documents per second inserting straight into an FTS5 table (no chunks, no bookkeeping)."""
    rows = list(documents(corpus))
    db.unlink(missing_ok=True)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"CREATE VIRTUAL TABLE docs USING fts5(title, body, tokenize='{TOKENIZER}')")
        started = time.perf_counter()
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO docs(title, body) VALUES (?, ?)", [(t, b) for _, t, b in rows])
        conn.execute("COMMIT")
        elapsed = time.perf_counter() - started
    finally:
        conn.close()
    return len(rows), elapsed


def timed_import(notes: Path, data_dir: Path, python: str = sys.executable) -> tuple[float, float]:
    """Seconds `knowledge-mcp import notes` takes, start-up included, into an emptied data dir:
    wall clock and the process's CPU time (user + system, all its threads)."""
    shutil.rmtree(data_dir, ignore_errors=True)
    notes, data_dir = notes.resolve(), data_dir.resolve()
    command = [python, "-m", "knowledge_mcp", "import", "notes", str(notes), "--data-dir", str(data_dir)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # Run outside any clone: `python -m` puts the working folder first on the path, so a clone's
    # own `knowledge_mcp/` there would shadow the one `python` (another clone's) is meant to run.
    subprocess.run([*command, "--json"], check=True, capture_output=True, cwd=data_dir.parent)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def compare(
    corpus: Path, notes: Path, data_dir: Path, repeat: int, before: str | None = None
) -> dict[str, object]:
    """Raw FTS5 and the import command, round after round, in one run; with `before` (another
    clone's Python), that clone's import too, in the same rounds. The ratios are raw FTS5's
    seconds over the import's, wall clock and CPU time (a shared machine's load moves the
    first more); each the median over the rounds."""
    count = write_notes(corpus, notes) if not notes.is_dir() else sum(1 for _ in documents(corpus))
    runs: dict[str, list[tuple[float, float]]] = {"raw_fts5": [], "import": [], "before": []}
    for _ in range(repeat):
        cpu = time.process_time()
        _, raw_s = raw_fts5(corpus, data_dir.with_name(data_dir.name + "-raw.db"))
        runs["raw_fts5"].append((raw_s, time.process_time() - cpu))
        runs["import"].append(timed_import(notes, data_dir))
        if before:
            runs["before"].append(timed_import(notes, data_dir, before))
    report: dict[str, object] = {"documents": count, "rounds": repeat}
    raw = runs["raw_fts5"]
    for name, timings in runs.items():
        if not timings:
            continue
        wall = statistics.median(w for w, _ in timings)
        report[name] = {
            "wall_s": [round(w, 3) for w, _ in timings],
            "cpu_s": [round(c, 3) for _, c in timings],
            "docs_per_s": round(count / wall),
            "ratio_wall": round(statistics.median(r[0] / t[0] for r, t in zip(raw, timings, strict=True)), 3),
            "ratio_cpu": round(statistics.median(r[1] / t[1] for r, t in zip(raw, timings, strict=True)), 3),
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="a BEIR corpus.jsonl (_id, title, text)")
    parser.add_argument("out", type=Path, help="the notes folder to write")
    parser.add_argument("--fts5", type=Path, help="instead: time raw FTS5 inserts into this database")
    parser.add_argument("--compare", type=Path, help="instead: time both in one run, into this data dir")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of --compare (default 3)")
    parser.add_argument(
        "--before", help="with --compare: also time this Python's knowledge_mcp (another clone)"
    )
    args = parser.parse_args()
    if args.compare:
        print(json.dumps(compare(args.corpus, args.out, args.compare, args.repeat, args.before)))
        return
    if args.fts5:
        count, elapsed = raw_fts5(args.corpus, args.fts5)
        print(f"raw FTS5: {count} documents in {elapsed:.2f} s = {count / elapsed:.0f} docs/s")
        return
    print(f"{write_notes(args.corpus, args.out)} notes written to {args.out}")


if __name__ == "__main__":
    main()
