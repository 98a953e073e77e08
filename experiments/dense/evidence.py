"""Where the semantic floor's numbers come from (`sources/search/dense/evidence.py`): the best
cosine of queries of random letters in a collection, against that of questions it answers.

    python -m experiments.dense.evidence --beir DIR --data-dir D --notes-data-dir N [--json]

The **fit set**: SciFact (`D`: a data dir where `knowledge-mcp eval --retrieval hybrid` ran, its
vectors reused; user `eval`) and the project's sample notes (`N`: `fixtures/notes` imported and
embedded, user `local`). Every query's cosines with every item are read once; the collections
are the whole corpus and random sub-collections of 30 to 1,000 abstracts (a note collection of
a few dozen is in the fit), and the sample notes:

- answered: a SciFact train query over a collection holding its relevant abstracts, when one
  of them is its nearest item (a clear best match);
- nonsense: 200 queries of 1-4 words of random letters (not the floor's own probes);
- off-topic: SciFact's claims over the sample notes (real language, no answer there).

In each collection the floor's bar is its probes' highest best cosine plus a margin; for each
margin of `MARGINS` this prints the share of each group kept (answered), and `MARGIN` is the
smallest that keeps at most `NONSENSE_KEPT` of the nonsense. The check set
(`tests/sources/search/dense/everyday/`) is kept out of the fit: only the test reads it.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from experiments.split.signals import nonsense_queries
from knowledge_mcp.bench.evaluation import load_beir
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.search.dense import evidence
from knowledge_mcp.sources.search.dense.embedder import embedder
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.storage.db import Database, database_path, open_database

SEED = 28
SIZES = (30, 100, 300, 1000)
SUBSETS = 3
NONSENSE = 200
FORMER_FLOOR = 0.40
MARGINS = (0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06)
NONSENSE_KEPT = 0.01


async def cosines(db: Database, vectors: list[Any]) -> np.ndarray:
    """Each query's best cosine with every item (by rowid order)."""
    rows = await db.fetchall("SELECT id FROM notes_items ORDER BY id")
    where = {int(r[0]): i for i, r in enumerate(rows)}
    store = SqliteVectorStore(db, SOURCES["notes"])
    out = np.zeros((len(vectors), len(where)), np.float32)
    for q, vector in enumerate(vectors):
        hits = await store.nearest(vector, len(where) + 10)
        for item, best in zip(hits.items.tolist(), hits.best.tolist(), strict=True):
            out[q, where[int(item)]] = best
    return out


async def doc_index(db: Database) -> dict[str, int]:
    rows = await db.fetchall("SELECT id, origin FROM notes_items ORDER BY id")
    return {str(r[1]).split("#", 1)[-1]: i for i, r in enumerate(rows)}


async def read_cosines(beir: Path, data_dir: Path, notes_dir: Path) -> dict[str, Any]:
    """Every query's cosines with every item of both collections (the slow part: `--cache`)."""
    model = embedder()
    assert model is not None, "the semantic extra is needed"
    _, queries, qrels, qids = load_beir(beir, "train")
    real = [model.embed_query(queries[q]) for q in qids]
    junk = [model.embed_query(t) for t in nonsense_queries(NONSENSE, SEED)]
    probes = [model.embed_query(t) for t in evidence.probes()]
    sci = await open_database(database_path(data_dir, "eval", "notes"), notes.migrations)
    vault = await open_database(database_path(notes_dir, "local", "notes"), notes.migrations)
    try:
        index = await doc_index(sci)
        out: dict[str, Any] = {
            "real": await cosines(sci, real),
            "junk": await cosines(sci, junk),
            "probes": await cosines(sci, probes),
            "off": await cosines(vault, real),
            "junk_notes": await cosines(vault, junk),
            "probes_notes": await cosines(vault, probes),
        }
    finally:
        await sci.close()
        await vault.close()
    out["relevant"] = [[index[d] for d in qrels[q] if d in index] for q in qids]
    return out


def collections(n_docs: int, rng: random.Random) -> list[np.ndarray]:
    """The whole corpus and `SUBSETS` random sub-collections of each size (item positions)."""
    out = [np.arange(n_docs)]
    for size in SIZES:
        out += [np.array(sorted(rng.sample(range(n_docs), size))) for _ in range(SUBSETS)]
    return out


def kept(cos: dict[str, Any], margin: float, absolute: float | None = None) -> dict[str, tuple[int, int]]:
    """Per group: (kept, count) under the bar of `margin` (or under the former absolute floor)."""
    rng = random.Random(SEED)
    n_docs = cos["real"].shape[1]
    groups: dict[str, list[bool]] = {"answered": [], "nonsense": [], "off_topic": []}
    for ids in collections(n_docs, rng):
        bar = float(cos["probes"][:, ids].max()) + margin if absolute is None else absolute
        groups["nonsense"] += [bool(b >= bar) for b in cos["junk"][:, ids].max(axis=1)]
        for q, relevant in enumerate(cos["relevant"]):
            held = np.union1d(ids[len(relevant) :], relevant) if len(ids) < n_docs else ids
            row = cos["real"][q][held]
            if int(held[int(np.argmax(row))]) in relevant:
                bar_here = float(cos["probes"][:, held].max()) + margin if absolute is None else absolute
                groups["answered"].append(bool(row.max() >= bar_here))
    bar = float(cos["probes_notes"].max()) + margin if absolute is None else absolute
    groups["nonsense"] += [bool(b >= bar) for b in cos["junk_notes"].max(axis=1)]
    groups["off_topic"] = [bool(b >= bar) for b in cos["off"].max(axis=1)]
    return {name: (sum(v), len(v)) for name, v in groups.items()}


def report(cos: dict[str, Any]) -> dict[str, Any]:
    table = {m: kept(cos, m) for m in MARGINS}
    chosen = next(
        (m for m in MARGINS if table[m]["nonsense"][0] <= NONSENSE_KEPT * table[m]["nonsense"][1]), None
    )
    return {
        "probes": evidence.PROBES,
        "notes_probe_best_max": round(float(cos["probes_notes"].max()), 4),
        "scifact_probe_best_max": round(float(cos["probes"].max()), 4),
        "kept_share": {
            str(m): {g: round(k / max(1, n), 4) for g, (k, n) in groups.items()}
            for m, groups in table.items()
        },
        "counts": {g: n for g, (_, n) in table[MARGINS[0]].items()},
        "margin": chosen,
        "former_floor": {g: round(k / max(1, n), 4) for g, (k, n) in kept(cos, 0.0, FORMER_FLOOR).items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--beir", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--notes-data-dir", type=Path, required=True)
    parser.add_argument("--cache", type=Path, help="keep the cosines here (read them from it when present)")
    args = parser.parse_args()
    if args.cache is not None and args.cache.exists():
        cos = pickle.loads(args.cache.read_bytes())
    else:
        cos = anyio.run(read_cosines, args.beir, args.data_dir, args.notes_data_dir)
        if args.cache is not None:
            args.cache.write_bytes(pickle.dumps(cos))
    print(json.dumps(report(cos), indent=2))


if __name__ == "__main__":
    main()
