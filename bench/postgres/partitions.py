"""Partition per user at many users: python -m knowledge_mcp.bench.postgres.partitions.

Imports a BEIR corpus (SciFact) as one user's notes, ranks its first queries, then makes
`--users` more users (each one's partitions, as a first write makes them: `schema.ensure_user`)
and ranks the same queries again: the cost of a new user and whether thousands of partitions
slow one user's ranking (planning prunes to the user's partition). Every user made is dropped
at the end.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.storage.postgres import bm25
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, check_url, open_pg
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS, drop_user, ensure_user

from ..evaluation import load_beir, spread
from .evaluation import import_corpus

RELATIONS_SQL = "SELECT count(*) AS n FROM pg_class"


async def rank_all(db: PgDatabase, user: str, queries: list[str]) -> dict[str, float]:
    took = []
    for text in queries:
        started = time.perf_counter()
        await bm25.rank(db, "notes", user, parse_query(text), 10, notes.weights)
        took.append((time.perf_counter() - started) * 1000)
    return spread(took)


async def measure(url: str, beir: Path, users: int, queries: int) -> dict[str, Any]:
    corpus, texts, _, qids = load_beir(beir, "train", queries)
    asked = [texts[q] for q in qids]
    db = await open_pg(url)
    tag = uuid.uuid4().hex[:6]
    owner, others = f"parts-{tag}-owner", [f"parts-{tag}-{n}" for n in range(users)]
    report: dict[str, Any] = {"users": users, "queries": len(asked)}
    try:
        await migrate(db, COMPONENT, MIGRATIONS)
        await import_corpus(db, owner, beir, corpus)
        report["relations_before"] = (await db.fetchone(RELATIONS_SQL) or {}).get("n")
        report["rank_ms_before"] = await rank_all(db, owner, asked)
        made = []
        for user in others:
            started = time.perf_counter()
            await ensure_user(db, user)
            made.append((time.perf_counter() - started) * 1000)
        report["new_user_ms"] = spread(made, 1)
        report["relations_after"] = (await db.fetchone(RELATIONS_SQL) or {}).get("n")
        report["rank_ms_after"] = await rank_all(db, owner, asked)
    finally:
        for user in [owner, *others]:
            await drop_user(db, user)
        await db.close()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument(
        "--beir", type=Path, required=True, help="a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)"
    )
    parser.add_argument("--users", type=int, default=1000, help="users to add (default 1000)")
    parser.add_argument("--queries", type=int, default=200, help="train queries ranked (default 200)")
    args = parser.parse_args(argv)
    report = anyio.run(measure, check_url(args.database_url), args.beir, args.users, args.queries)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
