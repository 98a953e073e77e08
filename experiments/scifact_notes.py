"""A real notes folder from a BEIR corpus, and the raw FTS5 baseline to compare an import with.

`python -m experiments.scifact_notes CORPUS.jsonl OUT_DIR` writes one Markdown note per
document (`<_id>.md`: front matter title, the abstract as body), for timing
`knowledge-mcp import notes OUT_DIR`. With `--fts5 DB` it instead inserts the same documents
straight into a bare FTS5 table (same tokenizer, one transaction) and prints documents per
second: the floor no importer can beat.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="a BEIR corpus.jsonl (_id, title, text)")
    parser.add_argument("out", type=Path, help="the notes folder to write")
    parser.add_argument("--fts5", type=Path, help="instead: time raw FTS5 inserts into this database")
    args = parser.parse_args()
    if args.fts5:
        count, elapsed = raw_fts5(args.corpus, args.fts5)
        print(f"raw FTS5: {count} documents in {elapsed:.2f} s = {count / elapsed:.0f} docs/s")
        return
    print(f"{write_notes(args.corpus, args.out)} notes written to {args.out}")


if __name__ == "__main__":
    main()
