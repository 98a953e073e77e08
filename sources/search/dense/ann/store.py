"""An approximate index of a large source's vectors: usearch HNSW, kept next to its database.

Exact cosine over every window costs a matrix product per query, growing with the windows in
time and memory; from `MIN_WINDOWS` windows on, where exact costs about what this index does for
the dense stage's windows (`bench.dense.ann`; the figures: `docs/performance.md`, "Dense
search"), a source's dense stage asks this index instead (`KNOWLEDGE_MCP_ANN_MIN_WINDOWS` sets
it).

The index holds one entry per embedded text and window (`{source}_vectors`, content-addressed: a
key's vector never changes), stored as float16: on real MiniLM vectors its top ten are nearly
exact's (the recall: `docs/performance.md`, "Dense search"). A key is 56 bits of the text's hash
(a collision among a million texts: ~1e-5) and the window's number.
It lives in `<user folder>/<source>.usearch`, beside the source's database: per user and per
source, never shared. The SQLite vectors are the truth: `sync` reads which
texts the chunks have now and adds the missing ones and removes the gone ones (only the
difference is embedded in the graph), so a missing, stale, foreign or corrupt file is repaired
or rebuilt. It is written to a temporary file and renamed over the old one: a crash mid-write
leaves the old file, which the next sync brings up to date.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from loguru import logger

from ..sqlite import vectors

MIN_WINDOWS = 50_000
"""From this many windows on, a source searches its approximate index (below: exact numpy)."""
ENV = "KNOWLEDGE_MCP_ANN_MIN_WINDOWS"
DTYPE = "f16"
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 128
WINDOW_BITS = 8
"""A key is a text's 56-bit hash prefix, then its window's number (a text has < 256 windows)."""
ADD_BLOCK = 4_096
"""Texts whose vectors are read and added at a time (their memory stays small)."""
DIMENSIONS = 384
"""Of an index made before any vector is stored (MiniLM's)."""
READ_BLOCK = 500
"""Texts read by one statement (bound parameters)."""

Ints = npt.NDArray[np.int64]
Keys = npt.NDArray[np.uint64]


def min_windows() -> int:
    """The threshold (`ENV`, else `MIN_WINDOWS`); never, without usearch installed."""
    if importlib.util.find_spec("usearch") is None:
        return sys.maxsize
    value = os.environ.get(ENV, "")
    return int(value) if value.strip().isdigit() else MIN_WINDOWS


def index_path(db_path: Path) -> Path:
    """Where a source database's index is kept: beside it (`notes.db` → `notes.usearch`)."""
    return db_path.with_suffix(".usearch")


def text_key(text_hash: str) -> int:
    return int(text_hash[:14], 16)


def window_keys(texts: Ints, windows: Ints) -> Keys:
    """Every window's key of these texts (text keys and their window counts), in order."""
    counts = np.minimum(windows, (1 << WINDOW_BITS) - 1)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    number = np.arange(int(counts.sum()), dtype=np.int64) - first
    keys: Keys = ((np.repeat(texts, counts) << WINDOW_BITS) | number).astype(np.uint64)
    return keys


@dataclass(frozen=True)
class Layout:
    """Which chunk (and item) has which text, as the database said at `stamp`: rows sorted by
    text key (`by_text`) and by item (`by_item`), as arrays of chunk, item, text key, windows."""

    chunks: Ints
    items: Ints
    texts: Ints
    windows: Ints
    by_item: Ints
    stamp: tuple[Any, ...]

    @classmethod
    def of(cls, rows: list[Any], stamp: tuple[Any, ...]) -> Layout:
        chunks = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        items = np.fromiter((r[1] for r in rows), np.int64, len(rows))
        texts = np.fromiter((text_key(r[2]) for r in rows), np.int64, len(rows))
        windows = np.fromiter((r[3] for r in rows), np.int64, len(rows))
        order = np.lexsort((chunks, texts))
        chunks, items, texts, windows = chunks[order], items[order], texts[order], windows[order]
        return cls(chunks, items, texts, windows, np.lexsort((chunks, items)), stamp)

    def keys(self) -> Keys:
        """Every window key the index should hold (one per text, not per chunk)."""
        first = np.ones(len(self.texts), bool)
        first[1:] = self.texts[1:] != self.texts[:-1]
        return window_keys(self.texts[first], self.windows[first])


@dataclass
class AnnIndex:
    index: Any
    """The usearch `Index`."""
    layout: Layout


def usearch_index() -> Any:
    """usearch's `Index` class, loaded after onnxruntime: loaded before it, usearch's compiled
    module makes the process crash when onnxruntime is then imported (usearch 2.26,
    onnxruntime 1.32, Linux x86-64)."""
    if importlib.util.find_spec("onnxruntime") is not None:
        import onnxruntime  # noqa: F401

    from usearch.index import Index

    return Index


def new_index(dim: int, dtype: str = DTYPE) -> Any:
    """An empty index as search builds it (`bench.dense.ann` measures it so)."""
    return usearch_index()(
        ndim=dim, metric="ip", dtype=dtype, connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH,
    )  # fmt: skip


def load(path: Path, dim: int) -> Any:
    """The index saved at `path`, or a new empty one when it is missing, unreadable or of
    another shape (it is then rebuilt from the database)."""
    if path.is_file():
        try:
            index = usearch_index().restore(str(path))
            if index is not None and index.ndim == dim:
                return index
        except (ValueError, RuntimeError, OSError) as error:
            logger.warning(
                "approximate index {} unreadable ({}); rebuilding it", path.name, type(error).__name__
            )
    return new_index(dim)


_ONE_SYNC_AT_A_TIME = threading.Lock()


def sync(db_path: Path, table: str, index: Any, threads: int = 1) -> AnnIndex:
    """Bring `index` (None: the saved one) to the database's vectors now, save it; in a worker
    thread, on a read-only connection of its own, in one read transaction."""
    path = index_path(db_path)
    with _ONE_SYNC_AT_A_TIME:
        conn = sqlite3.connect(
            f"file:{db_path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("BEGIN")
            stamp = tuple(conn.execute(vectors.sql(vectors.STAMP_SQL, table)).fetchone())
            rows = conn.execute(vectors.sql(vectors.LAYOUT_SQL, table)).fetchall()
            layout = Layout.of(rows, stamp)
            if index is None:
                index = load(path, _dimensions(conn, table))
            changed = _apply(conn, table, index, layout, {text_key(r[2]): r[2] for r in rows}, threads)
            conn.execute("COMMIT")
        finally:
            conn.close()
    if changed or not path.is_file():
        _save(index, path)
    return AnnIndex(index, layout)


def _dimensions(conn: sqlite3.Connection, table: str) -> int:
    row = conn.execute(vectors.sql(vectors.DIMENSIONS_SQL, table)).fetchone()
    return int(row[0]) if row is not None and row[0] else DIMENSIONS


def _apply(
    conn: sqlite3.Connection, table: str, index: Any, layout: Layout, hashes: dict[int, str], threads: int
) -> bool:
    """Remove the keys the database no longer has, add those it has newly; whether any changed."""
    wanted = layout.keys()
    held = np.asarray(index.keys[:], dtype=np.uint64) if len(index) else np.zeros(0, np.uint64)
    gone = np.setdiff1d(held, wanted, assume_unique=True)
    if len(gone):
        index.remove(gone)
    new = np.unique(np.setdiff1d(wanted, held, assume_unique=True) >> np.uint64(WINDOW_BITS))
    for start in range(0, len(new), ADD_BLOCK):
        block = [hashes[int(k)] for k in new[start : start + ADD_BLOCK]]
        keys, matrix = _vectors_of(conn, table, block)
        if len(keys):
            index.add(keys, matrix, threads=threads)
    return bool(len(gone) or len(new))


def _vectors_of(conn: sqlite3.Connection, table: str, hashes: list[str]) -> tuple[Keys, Any]:
    """The window keys and vectors of these texts, read from the database."""
    keys: list[Keys] = []
    parts: list[Any] = []
    for start in range(0, len(hashes), READ_BLOCK):
        some = hashes[start : start + READ_BLOCK]
        marks = ", ".join("?" * len(some))
        for text_hash, windows, blob in conn.execute(
            vectors.sql(vectors.VECTORS_OF_SQL, table, marks=marks), some
        ):
            matrix = np.frombuffer(blob, dtype=np.float32).reshape(int(windows), -1)
            keys.append(window_keys(np.array([text_key(text_hash)]), np.array([len(matrix)])))
            parts.append(matrix[: len(keys[-1])])
    if not keys:
        return np.zeros(0, np.uint64), np.zeros((0, 0), np.float32)
    return np.concatenate(keys), np.vstack(parts)


def _save(index: Any, path: Path) -> None:
    """Written beside the old file and renamed over it: the old one stays whole until then. The
    partial file is this process's own, so two workers saving at once never write one file."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        index.save(str(partial))
        os.replace(partial, path)
    except OSError as error:  # kept in memory; the next sync tries again
        logger.warning("approximate index {} not saved: {}", path.name, type(error).__name__)
        partial.unlink(missing_ok=True)
