"""Partition per user at many users: python -m experiments.postgres.partitions.

Imports a BEIR corpus (SciFact) as one user's notes, ranks its first queries, then makes
`--users` more users (each one's partitions, as a first write makes them: `schema.ensure_user`)
and ranks the same queries again after every `--step` users: the cost of a new user and whether
thousands of partitions slow one user's ranking, split into the server's planning and
execution time (EXPLAIN ANALYZE of every statement of a ranking, `explaining`: planning prunes
a partitioned table to the user's partition). Every user made is dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from pathlib import Path
from typing import Any, cast

import anyio

from experiments.postgres.explaining import Explaining
from knowledge_mcp.bench.evaluation import load_beir, spread
from knowledge_mcp.bench.postgres.evaluation import import_corpus
from knowledge_mcp.bench.workers.cpu import load_average
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.search.query import parse_query
from knowledge_mcp.sources.storage.postgres import bm25
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, check_url, open_pg
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS, drop_user, ensure_user

RELATIONS_SQL = "SELECT count(*) AS n FROM pg_class"


async def rank_all(db: PgDatabase, user: str, queries: list[str]) -> dict[str, float]:
    took = []
    for text in queries:
        started = time.perf_counter()
        await bm25.rank(db, "notes", user, parse_query(text), 10, notes.weights)
        took.append((time.perf_counter() - started) * 1000)
    return spread(took)


async def explain_all(db: PgDatabase, user: str, queries: list[str]) -> dict[str, Any]:
    """Per ranking, the server's planning and execution ms summed over its statements."""
    planning, execution, statements = [], [], 0
    for text in queries:
        explaining = Explaining(db)
        await bm25.rank(cast(PgDatabase, explaining), "notes", user, parse_query(text), 10, notes.weights)
        planning.append(explaining.tally.planning_ms)
        execution.append(explaining.tally.execution_ms)
        statements += explaining.tally.statements
    return {
        "planning_ms": spread(planning),
        "execution_ms": spread(execution),
        "statements_per_ranking": round(statements / max(len(queries), 1), 1),
    }


async def checkpoint(db: PgDatabase, owner: str, asked: list[str], users: int) -> dict[str, Any]:
    """The owner's ranking with `users` more users: wall ms, then planning against execution."""
    relations = (await db.fetchone(RELATIONS_SQL) or {}).get("n")
    return {"users": users, "relations": relations, "rank_ms": await rank_all(db, owner, asked)} | (
        await explain_all(db, owner, asked)
    )


async def measure(url: str, beir: Path, users: int, queries: int, step: int) -> dict[str, Any]:
    corpus, texts, _, qids = load_beir(beir, "train", queries)
    asked = [texts[q] for q in qids]
    db = await open_pg(url)
    tag = uuid.uuid4().hex[:6]
    owner, others = f"parts-{tag}-owner", [f"parts-{tag}-{n}" for n in range(users)]
    report: dict[str, Any] = {"users": users, "queries": len(asked), "load_average": [load_average()]}
    made: list[float] = []
    try:
        await migrate(db, COMPONENT, MIGRATIONS)
        await import_corpus(db, owner, beir, corpus)
        steps = [await checkpoint(db, owner, asked, 0)]
        for at in range(0, users, step):
            for user in others[at : at + step]:
                started = time.perf_counter()
                await ensure_user(db, user)
                made.append((time.perf_counter() - started) * 1000)
            steps.append(await checkpoint(db, owner, asked, len(made)))
            report["load_average"].append(load_average())
        report["steps"] = steps
        report["new_user_ms"] = spread(made, 1)
    finally:
        started = time.perf_counter()
        for user in [owner, *others]:
            await drop_user(db, user)
        report["drop_all_s"] = round(time.perf_counter() - started, 1)
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
    parser.add_argument("--step", type=int, default=1000, help="rank again after each this many users")
    args = parser.parse_args(argv)
    url = check_url(args.database_url)
    report = anyio.run(measure, url, args.beir, args.users, args.queries, max(args.step, 1))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
