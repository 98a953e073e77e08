"""`knowledge-mcp bench --dense`: what the embeddings cost.

- embedding throughput: real passages (the repository's own note fixtures, ~200 words each)
  embedded by the installed model in a fresh process, whose peak RSS is the model's and the
  batches' alone;
- hybrid search: every chunk of the bench corpus given a synthetic unit vector (stored as the
  real ones are, so the dense index is complete), then each source searched with `mode =
  hybrid`; the query is embedded for real on every search (its cache emptied first);
- the dense stage alone at N synthetic vectors (default 1M): exact cosine with numpy and the
  best `POOL`, time per query and the matrix's memory; and the approximate index search builds
  for large sources (`sources/search/dense/ann/`): latency, recall@10 against exact.

"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.dense import vectors
from knowledge_mcp.sources.search.dense.embedder import Embedder
from knowledge_mcp.sources.search.dense.index import DenseIndex, dense_indexes
from knowledge_mcp.sources.search.dense.query_vectors import QUERY_VECTORS
from knowledge_mcp.sources.search.dense.retriever import POOL, _best
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.storage.db import Database, database_path, open_database

from ..corpus import Corpus
from ..phases import USER, bench_aggregator
from .ann import compare
from .synthetic import stats, the_model, unit_matrix

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "notes"
PASSAGE_WORDS = 200
SAMPLE = 64
DENSE_QUERIES = 50
CHILD = (
    "import json, sys; from knowledge_mcp.bench.dense.speed import _embed_in_child as run; "
    "print(json.dumps(run(json.load(sys.stdin))))"
)


def passages(folder: Path = FIXTURES, words: int = PASSAGE_WORDS, limit: int = SAMPLE) -> list[str]:
    """Real text cut into passages of `words` words (the last of each file may be shorter)."""
    out: list[str] = []
    for path in sorted(p for p in folder.rglob("*.md") if not any(part.startswith(".") for part in p.parts)):
        tokens = path.read_text(encoding="utf-8", errors="replace").split()
        out += [" ".join(tokens[i : i + words]) for i in range(0, len(tokens), words)]
    return out[:limit]


def _embed_in_child(texts: list[str]) -> dict[str, Any]:
    """In a fresh process: load the model, embed `texts`; seconds and this process's peak RSS."""
    import resource

    t0 = time.perf_counter()
    model = the_model()
    model.embed_query("warm up")
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    windows = sum(len(v) for v in model.embed_windows(texts))
    seconds = time.perf_counter() - t0
    return {
        "model": model.model_id,
        "passages": len(texts),
        "windows": windows,
        "words_per_passage": PASSAGE_WORDS,
        "load_s": round(load_s, 2),
        "seconds": round(seconds, 2),
        "passages_per_s": round(len(texts) / max(seconds, 1e-9), 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def embedding_throughput(sample: int = SAMPLE) -> dict[str, Any]:
    texts = passages(limit=sample)
    if not texts:
        raise KnowledgeError(f"--dense: no passages under {FIXTURES}")
    done = subprocess.run(
        [sys.executable, "-c", CHILD], input=json.dumps(texts), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise KnowledgeError(f"--dense: embedding failed: {done.stderr.strip().splitlines()[-1:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    return report


async def give_synthetic_vectors(db: Database, table: str, model: Embedder, seed: int = 1) -> int:
    """Every chunk without vectors gets one random unit vector, keyed as the model's would be."""
    rng = np.random.default_rng(seed)
    after, given = 0, 0
    while rows := await vectors.missing(db, table, after, 2_000):
        after = int(rows[-1][0])
        hashes = {
            int(r[0]): vectors.text_hash(model.model_id, vectors.embedded_text(r[1], r[2])) for r in rows
        }
        block = rng.standard_normal((len(hashes), model.dim)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        new = {h: block[n : n + 1] for n, h in enumerate(dict.fromkeys(hashes.values()))}
        await vectors.write_batch(db, table, new, list(hashes.items()))
        given += len(rows)
    return given


async def hybrid_search(queries: list[str], dbs: dict[str, Database]) -> dict[str, Any]:
    """Each source searched with `mode = hybrid` over its synthetic vectors, the query embedded
    on every search."""
    model = the_model()
    defaults = Defaults()
    per_source: dict[str, Any] = {}
    for name, source in SOURCES.items():
        db = dbs[name]
        chunks = await give_synthetic_vectors(db, name, model)
        await source.memory_indexes(db).ready()
        # A large source's approximate index is built in the background: timed apart, then used.
        t0 = time.perf_counter()
        index = await dense_indexes(db, source).ready()
        ready_s = time.perf_counter() - t0
        await source.search(db, SearchRequest("warm up", limit=10, mode="hybrid"), defaults)
        ms: list[float] = []
        hybrid = 0
        for q in queries:
            QUERY_VECTORS._vectors.clear()  # so this search embeds its query, as a new one does
            t0 = time.perf_counter()
            response = await source.search(db, SearchRequest(q, limit=10, mode="hybrid"), defaults)
            ms.append((time.perf_counter() - t0) * 1000)
            hybrid += any(r.score_type == "hybrid" for r in response.results)
        total = (await vectors.coverage(db, name)).chunks
        per_source[name] = {
            "chunks": total,
            "vectors_given": chunks,
            "dense_index": "exact" if isinstance(index, DenseIndex) else "approximate",
            "index_ready_s": round(ready_s, 2),
            "hybrid_answers": hybrid,
            **stats(ms),
        }
    return {"queries": len(queries), "query_embedded_each_time": True, "per_source": per_source}


def dense_stage(n: int, dim: int = 384, queries: int = DENSE_QUERIES) -> dict[str, Any]:
    """The dense stage alone over `n` synthetic one-window items: exact cosine (every item's best,
    the top `POOL`) and the approximate index as search builds it (`bench.dense.ann`: latency
    and recall@10 against exact)."""
    t0 = time.perf_counter()
    matrix = unit_matrix(n, dim)
    ids = np.arange(n, dtype=np.int64)
    index = DenseIndex(matrix, ids, ids, ids, vectors.Coverage(n, n))
    build_s = time.perf_counter() - t0
    probes = unit_matrix(queries, dim, seed=2)
    ms: list[float] = []
    for q in probes:
        t0 = time.perf_counter()
        _, best = index.cosines(q)
        _best(best, POOL)
        ms.append((time.perf_counter() - t0) * 1000)
    del matrix, index
    return {
        "vectors": n,
        "dim": dim,
        "queries": queries,
        "build_s": round(build_s, 2),
        "matrix_mb": round(n * dim * 4 / 2**20, 1),
        "exact_ms": stats(ms),
        "approximate": compare(n, "usearch", dim, queries),
    }


async def bench_dense(corpus: Corpus, data_dir: Path, dense_vectors: int) -> dict[str, Any]:
    """Embedding throughput, hybrid search over the bench corpus (each source, then
    `knowledge_search` over all of them), the dense stage alone at N vectors."""
    throughput = embedding_throughput()
    queries = [q for _, q in corpus.queries]
    spread = queries[:: max(1, len(queries) // DENSE_QUERIES)][:DENSE_QUERIES]
    dbs = {
        name: await open_database(database_path(data_dir, USER, name), source.migrations)
        for name, source in SOURCES.items()
    }
    try:
        hybrid = await hybrid_search(spread, dbs)
    finally:
        for db in dbs.values():
            await db.close()
    everywhere = await bench_aggregator(corpus, data_dir, mode="hybrid")
    return {
        "embedding": throughput,
        "hybrid_search_ms": hybrid,
        "knowledge_search_hybrid": everywhere,
        "dense_stage": dense_stage(dense_vectors),
    }
