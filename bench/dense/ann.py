"""An approximate index against exact numpy at N vectors: latency, recall@10, build time, memory.

    python -m knowledge_mcp.bench.dense.ann [--vectors 1000000] [--library usearch|hnswlib]

`usearch` is built as search builds it for a large source (`sources/search/dense/ann/store.py`: its
dtype, connectivity and expansions; `--dtype` tries another storage); `hnswlib` is the
alternative measured (not a dependency: `pip install hnswlib` first). The vectors are
synthetic: unit vectors around `CLUSTERS` random centres (real embeddings cluster by topic;
uniform random vectors in 384 dimensions have no near neighbours and would understate every
ANN's recall).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from knowledge_mcp.sources.search.dense.ann.hits import WINDOWS_PER_ITEM
from knowledge_mcp.sources.search.dense.ann.store import DTYPE, new_index
from knowledge_mcp.sources.search.dense.retriever import POOL

from .synthetic import BLOCK, stats, the_model, unit_matrix

CLUSTERS = 2_000
SPREAD = 1.33
"""The noise's length against the centre's (so a point's cosine to its centre is about 0.6)."""
K = 10
SEARCHED = POOL * WINDOWS_PER_ITEM
"""Windows the dense stage asks of the index for a page (`ann_hits.search`)."""


def clustered(n: int, dim: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = unit_matrix(CLUSTERS, dim, seed=seed + 100)
    out = np.empty((n, dim), np.float32)
    for start in range(0, n, BLOCK):
        size = min(BLOCK, n - start)
        noise = rng.standard_normal((size, dim), np.float32) * (SPREAD / dim**0.5)
        block = centres[rng.integers(0, CLUSTERS, size)] + noise
        out[start : start + size] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def exact_top(matrix: np.ndarray, probes: np.ndarray, k: int = K) -> tuple[list[set[int]], list[float]]:
    """Each probe's exact top k (by cosine), and the time each took in ms."""
    tops, ms = [], []
    for q in probes:
        t0 = time.perf_counter()
        scores = np.einsum("ij,j->i", matrix, q)
        tops.append({int(i) for i in np.argpartition(-scores, k)[:k]})
        ms.append((time.perf_counter() - t0) * 1000)
    return tops, ms


def build(library: str, matrix: np.ndarray, dtype: str = DTYPE) -> Any:
    if library == "usearch":
        index = new_index(matrix.shape[1], dtype)
        index.add(np.arange(len(matrix)), matrix, threads=2)
        return index
    import hnswlib

    index = hnswlib.Index(space="cosine", dim=matrix.shape[1])
    index.init_index(max_elements=len(matrix), M=16, ef_construction=128)
    index.add_items(matrix, np.arange(len(matrix)), num_threads=2)
    index.set_ef(64)
    return index


def query(library: str, index: Any, q: np.ndarray, k: int = K) -> set[int]:
    """The best `K` of a search for `k` (search asks for `SEARCHED` windows: a wider beam)."""
    if library == "usearch":
        return {int(key) for key in index.search(q, k, threads=1).keys[:K]}
    labels, _ = index.knn_query(q, k=k, num_threads=1)
    return {int(label) for label in labels[0][:K]}


def compare(n: int, library: str, dim: int = 384, queries: int = 100, dtype: str = DTYPE) -> dict[str, Any]:
    matrix = clustered(n, dim)
    probes = clustered(queries, dim, seed=2)
    truth, exact_ms = exact_top(matrix, probes)
    t0 = time.perf_counter()
    index = build(library, matrix, dtype)
    build_s = time.perf_counter() - t0
    ms, hits, searched_ms, searched_hits = [], 0, [], 0
    for q, top in zip(probes, truth, strict=True):
        t0 = time.perf_counter()
        found = query(library, index, q)
        ms.append((time.perf_counter() - t0) * 1000)
        hits += len(found & top)
        t0 = time.perf_counter()
        found = query(library, index, q, SEARCHED)
        searched_ms.append((time.perf_counter() - t0) * 1000)
        searched_hits += len(found & top)
    memory = index.memory_usage if library == "usearch" else None
    return {
        "library": library,
        "dtype": dtype if library == "usearch" else "f32",
        "vectors": n,
        "dim": dim,
        "queries": queries,
        "exact_ms": stats(exact_ms),
        "exact_matrix_mb": round(matrix.nbytes / 2**20, 1),
        "ann_ms": stats(ms),
        "recall@10": round(hits / (K * queries), 4),
        "as_searched": {
            "k": SEARCHED,
            "ms": stats(searched_ms),
            "recall@10": round(searched_hits / (K * queries), 4),
        },
        "build_s": round(build_s, 1),
        "index_mb": round(memory / 2**20, 1) if memory is not None else None,
    }


def real(db_path: Path, texts: list[str], dtype: str = DTYPE, table: str = "notes") -> dict[str, Any]:
    """The approximate index against exact on a source's real vectors, through search's own
    code (`ann.sync`, `ann_hits.search`; `index.DenseIndex`): each query's top ten items, for a
    search of 10 and of the dense stage's pool. The database is copied first (the index is
    written beside the copy)."""
    import shutil
    import sqlite3
    import tempfile

    from knowledge_mcp.sources.search.dense import vectors
    from knowledge_mcp.sources.search.dense.ann import hits as ann_hits
    from knowledge_mcp.sources.search.dense.ann import store as search_ann
    from knowledge_mcp.sources.search.dense.index import build as build_exact

    model = the_model()
    probes = [model.embed_query(t) for t in texts]
    with tempfile.TemporaryDirectory(prefix="knowledge-mcp-ann-") as tmp:
        copy = Path(tmp) / db_path.name
        shutil.copy(db_path, copy)
        conn = sqlite3.connect(copy)
        rows = conn.execute(vectors.sql(vectors.LOAD_SQL, table)).fetchall()
        conn.close()
        exact = build_exact(rows, vectors.Coverage(1, 1), ())
        search_ann.DTYPE, kept = dtype, search_ann.DTYPE
        try:
            t0 = time.perf_counter()
            index = search_ann.sync(copy, table, None, threads=2)
            build_s = time.perf_counter() - t0
        finally:
            search_ann.DTYPE = kept
        report: dict[str, Any] = {
            "windows": len(exact.matrix),
            "queries": len(probes),
            "build_s": round(build_s, 2),
        }
        for n in (K, POOL):
            hits, ms = 0, []
            for q in probes:
                best = exact.search(q).best
                top = set(exact.items[np.argsort(-best, kind="stable")[:K]].tolist())
                t0 = time.perf_counter()
                found = ann_hits.search(index, q, n)
                ms.append((time.perf_counter() - t0) * 1000)
                hits += len(top & set(found.items[:K].tolist()))
            report[f"items_{n}"] = {"ms": stats(ms), "recall@10": round(hits / (K * len(probes)), 4)}
    return {"library": "usearch", "dtype": dtype, **report}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m knowledge_mcp.bench.dense.ann")
    parser.add_argument("--vectors", type=int, default=1_000_000)
    parser.add_argument("--library", choices=["usearch", "hnswlib"], default="usearch")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--dtype", choices=["f32", "f16", "i8"], default=DTYPE)
    parser.add_argument("--real", type=Path, help="a notes database with vectors: its real vectors instead")
    parser.add_argument("--queries-file", type=Path, help="--real: a BEIR queries.jsonl")
    args = parser.parse_args(argv)
    if args.real is not None:
        lines = args.queries_file.read_text(encoding="utf-8").splitlines() if args.queries_file else []
        texts = [json.loads(line)["text"] for line in lines if line.strip()][: args.queries]
        print(json.dumps(real(args.real, texts or ["what is this about?"], args.dtype)))
        return 0
    print(json.dumps(compare(args.vectors, args.library, queries=args.queries, dtype=args.dtype)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
