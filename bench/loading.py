"""Loading the bench corpus: the product's importer in batches, and an optional cache.

The corpus streams from `CorpusStream` straight into each source's database through
`Importer.write_items` — the product's own SQL, triggers and FTS5 index, one transaction per
batch of about `BATCH_CHUNKS` chunks instead of one per item. Generation of the next batch
runs in a worker thread while SQLite indexes the current one in aiosqlite's thread, so the
two overlap on a multi-core machine. The databases are left as the product leaves them:
WAL, checkpointed, no `optimize` (the product's import does not run one).

With a cache dir, the loaded data dir is kept under a key of everything that decides its
bytes (size, seed, the source of the corpus generator, the importer, chunker and every
source's migrations, the SQLite version), with a manifest holding the corpus figures and
queries; a later run with the same key copies it instead of importing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage import importing
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.records import chunking

from . import corpus as bench_corpus
from .corpus import BenchItem, Corpus, CorpusStream

USER = "local"
BATCH_CHUNKS = 4000
MANIFEST = "bench-manifest.json"


def batches(items: Iterator[BenchItem], max_chunks: int = BATCH_CHUNKS) -> Iterator[list[BenchItem]]:
    """Runs of one source's items holding about `max_chunks` chunks each."""
    batch: list[BenchItem] = []
    chunks = 0
    for b in items:
        if batch and (b.source != batch[0].source or chunks >= max_chunks):
            yield batch
            batch, chunks = [], 0
        batch.append(b)
        chunks += b.chunk_count
    if batch:
        yield batch


async def load(stream: CorpusStream, data_dir: Path) -> dict[str, Any]:
    """Generate and import the corpus; per-source import figures (wall time of the source)."""
    report: dict[str, Any] = {}
    source_items = batches(stream.items())
    batch: list[BenchItem] | None = await asyncio.to_thread(next, source_items, None)
    while batch is not None:
        name = batch[0].source
        source = SOURCES[name]
        db = await open_database(database_path(data_dir, USER, name), source.migrations)
        importer = Importer(source, db)
        t0 = time.perf_counter()
        items = chunks = 0
        try:
            while batch is not None and batch[0].source == name:
                write = asyncio.ensure_future(
                    importer.write_items(
                        [(Path(f"bench/{name}/{items + k}"), b.item) for k, b in enumerate(batch)]
                    )
                )
                items += len(batch)
                chunks += sum(b.chunk_count for b in batch)
                # The next batch is generated (worker thread) while SQLite indexes this one.
                upcoming = asyncio.ensure_future(asyncio.to_thread(next, source_items, None))
                outcomes = await write
                if outcomes.count("added") != len(outcomes):
                    raise RuntimeError(f"bench import into {name}: expected only new items")
                batch = await upcoming
            # As the product's import ends: a large one merges the index (FTS5 `optimize`).
            await importer.optimize_if_large()
            await db.fetchone("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            await db.close()
        seconds = max(time.perf_counter() - t0, 1e-9)
        report[name] = {
            "items": items,
            "chunks": chunks,
            "seconds": round(seconds, 3),
            "items_per_s": round(items / seconds, 1),
            "chunks_per_s": round(chunks / seconds, 1),
        }
    return report


def cache_key(size: int, seed: int, query_count: int) -> str:
    """Everything that decides the loaded databases' bytes and the query set."""
    h = hashlib.sha256(f"{size}\x00{seed}\x00{query_count}\x00{sqlite3.sqlite_version}\x00".encode())
    for module in (bench_corpus, importing, chunking):
        h.update(Path(module.__file__ or "").read_bytes())
    h.update(Path(__file__).read_bytes())  # how the corpus is loaded (batches, the final merge)
    for name, source in SOURCES.items():
        for m in source.migrations:
            h.update(f"{name}\x00{m.version}\x00{m.sql}\x00".encode())
    return h.hexdigest()[:20]


def restore(cache_dir: Path, key: str, data_dir: Path) -> dict[str, Any] | None:
    """Copy a cached data dir into `data_dir`; its manifest, or None on a miss."""
    entry = cache_dir / key
    manifest = entry / MANIFEST
    if not manifest.is_file():
        return None
    shutil.copytree(entry / "data", data_dir, dirs_exist_ok=True)
    cached: dict[str, Any] = json.loads(manifest.read_text(encoding="utf-8"))
    return cached


def store(cache_dir: Path, key: str, data_dir: Path, manifest: dict[str, Any]) -> None:
    """Keep the loaded data dir; written under a temporary name and renamed, so a crash
    mid-copy never leaves an entry that looks complete."""
    entry = cache_dir / key
    if entry.exists():
        return
    partial = cache_dir / f".{key}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(data_dir, partial / "data")
    (partial / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    partial.rename(entry)


def corpus_manifest(corpus: Corpus, generate_and_import_s: float, imports: dict[str, Any]) -> dict[str, Any]:
    return {
        "seed": corpus.seed,
        "fingerprint": corpus.fingerprint(),
        "item_counts": corpus.item_counts,
        "chunk_counts": corpus.chunk_counts,
        "queries": corpus.queries,
        "generate_and_import_s": round(generate_and_import_s, 2),
        "import": imports,
    }


def corpus_from_manifest(manifest: dict[str, Any]) -> Corpus:
    corpus = Corpus(int(manifest["seed"]))
    corpus.item_counts = dict(manifest["item_counts"])
    corpus.chunk_counts = dict(manifest["chunk_counts"])
    corpus.queries = [(kind, query) for kind, query in manifest["queries"]]
    corpus.digest = str(manifest["fingerprint"])
    return corpus
